/**
 * The port between the sleep scheduler and the sleep work itself (consolidation, decay, digests).
 *
 * The scheduler decides *when* and *for which scope* a job runs, and under which limits (lease,
 * wake-up, token budget); the jobs decide *what* to do. Keeping the seam this small lets the two
 * be written, tested and replaced apart, and lets the scheduler be tested with a recording double.
 */

/** The three kinds of work the scheduler starts. */
export type SleepJobKind = 'consolidate' | 'decay' | 'digest';

/** What a job may know about the run it is part of. */
export interface SleepJobContext {
  /** The scheduler's clock at start; jobs use it instead of `new Date()` so runs are reproducible. */
  readonly now: Date;
  /**
   * uuidv7 from src/shared/ids.ts. It is also the id of the SleepRun row the scheduler created
   * (status `running`) for this run, so a job can add its counters (episodeCount, llmCalls, tokens,
   * stats) to that row and tag its LlmCall and AuditEvent rows with it. The scheduler sets the
   * final status, finishedAt and error itself.
   */
  readonly runId: string;
  /** False once the scope woke up (a new message arrived after the job started) or the service is stopping; jobs check it between batches and stop after finishing the current batch atomically. */
  shouldContinue(): boolean;
  /** Tokens this scope may still spend today (Infinity if no budget). */
  readonly tokenBudgetLeft: number;
  /** For digest jobs: the end of the period to report (the scope's local digest time today). */
  readonly periodEnd?: Date;
}

/**
 * How a job ended. `deferred` means "not now, try again later" (e.g. the budget ran out midway);
 * `skipped` means there was nothing to do. A job that throws is recorded as `failed`.
 */
export interface SleepJobOutcome {
  readonly status: 'succeeded' | 'failed' | 'deferred' | 'skipped';
  /** A short human explanation, stored on the SleepRun row (as its error when failed). */
  readonly detail?: string;
}

/** The sleep work, implemented elsewhere (src/sleep/consolidation and friends). */
export interface SleepJobs {
  /** Turns a batch of unconsolidated episodes of one scope into memories. */
  consolidate(scopeId: string, ctx: SleepJobContext): Promise<SleepJobOutcome>;
  /** Lets memories of one scope fade that have not been reinforced. */
  decay(scopeId: string, ctx: SleepJobContext): Promise<SleepJobOutcome>;
  /** Writes (and hands over for sending) the digest of the period ending at `ctx.periodEnd`. */
  digest(scopeId: string, ctx: SleepJobContext): Promise<SleepJobOutcome>;
}
