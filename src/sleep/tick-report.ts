/**
 * What the sleep scheduler reports for a tick and for each scope in it: the record that logs,
 * tests and status commands read, so they never have to query SleepRun rows to learn why a scope
 * was or was not worked on.
 */
import type { SleepJobKind, SleepJobOutcome } from './sleep-jobs';

/**
 * What happened to one scope in a tick. Besides the job outcomes: `not-due` (a selection rule
 * said no; the detail says which), `busy` (another process holds the lease) and
 * `invalid-settings` (the stored settings are broken; the detail names the field).
 */
export interface ScopeRunReport {
  readonly scopeId: string;
  readonly scopeKey: string;
  readonly status: SleepJobOutcome['status'] | 'not-due' | 'busy' | 'invalid-settings';
  readonly detail?: string;
  /** The SleepRun id, when a job was started or deferred. */
  readonly runId?: string;
}

/** The result of one tick, for logs, tests and status commands. */
export interface SleepTickReport {
  readonly kind: SleepJobKind;
  readonly startedAt: Date;
  /** True when the tick did nothing: the previous one is still running, or the scheduler is stopping. */
  readonly busy: boolean;
  readonly scopes: readonly ScopeRunReport[];
  /** Scopes with episodes that reached maxAttempts and will not be retried (consolidation only). */
  readonly exhausted: readonly { readonly scopeId: string; readonly scopeKey: string; readonly episodes: number }[];
  /** Set when the tick itself failed (e.g. the database was unreachable). */
  readonly error?: string;
}
