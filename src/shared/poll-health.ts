/**
 * What readiness (/readyz) says about Telegram long polling. The Telegram channel computes it
 * from its heartbeat; the API shows it. Here, in shared, because it is the contract between the
 * two doors and neither may import the other.
 */
export interface PollHealth {
  /** `polling`: a beat within the limit; `stale`: none for longer; `starting`: none yet. */
  readonly status: 'polling' | 'stale' | 'starting';
  readonly lastPollAt: string | null;
  readonly maxAgeSeconds: number;
}
