/**
 * The person's hand on consolidation, as the doors see it: "learn from our conversations now"
 * (/sleep), pause and resume. The sleep scheduler implements it (src/sleep/scheduler.ts); the
 * channels, the API and the MCP door are given it by the composition root and never reach into
 * sleep/, so when and how sleep runs stays sleep's concern.
 */

/** How a "consolidate now" ended, with the id of the sleep run it wrote (its audit events carry it) when it ran. */
export interface ConsolidationOutcome {
  /** `deferred`: today's budget is spent; `skipped`: nothing to do; a job that threw is `failed`. */
  readonly status: 'succeeded' | 'failed' | 'deferred' | 'skipped';
  /** A short human explanation. */
  readonly detail?: string;
  readonly runId?: string;
}

export interface ConsolidationControl {
  /**
   * Consolidates a scope now: ignores idleness, the episode minimum and the sleep window, but
   * still honours pause, the lease and the daily budget. Throws NotFoundError for an unknown
   * scope and ScopeSettingsError for broken settings.
   */
  consolidateNow(scopeId: string): Promise<ConsolidationOutcome>;
  /** Pauses consolidation of a scope (audited); false when it was already paused. */
  pause(scopeId: string, reason?: string): Promise<boolean>;
  /** Resumes consolidation of a scope (audited); false when it was not paused. */
  resume(scopeId: string, reason?: string): Promise<boolean>;
}
