/**
 * The way every message becomes an episode: channels, the CLI importer and the API all call
 * {@link EpisodeService.ingest} or {@link EpisodeService.ingestMany}.
 */
import type { Config } from '../../config/load-config';
import type { Logger } from '../../shared/logger';
import { explainStorageFailure } from '../../storage/storage-errors';
import type { EpisodeRecord, EpisodeRepository, NewEpisode } from '../../storage/episode-repository';
import type { ScopeDescriptor, ScopeRepository } from '../../storage/scope-repository';
import type { Scope } from '../../storage/prisma';
import { MAX_FUTURE_SKEW_MS, normalizeEpisode } from './normalize';
import { normalizeScopeKey } from '../scopes/scope-key';

/** A stored turn, as the domain hands it out (callers above the domain do not import storage types). */
export type Episode = EpisodeRecord;
export type { ScopeDescriptor };

export interface EpisodeServiceDeps {
  readonly scopes: ScopeRepository;
  readonly episodes: EpisodeRepository;
  readonly logger: Logger;
  /** Largest content accepted, in UTF-8 bytes. */
  readonly maxEpisodeBytes: number;
  /** The configured database, named in the errors a full disk or a lock produce. */
  readonly database?: Config['database'];
  readonly clock?: () => Date;
}

export interface IngestResult {
  /** The stored episode, or the one already stored under the same external id. */
  readonly episode: EpisodeRecord | null;
  readonly duplicate: boolean;
}

export interface EpisodeService {
  /** Validates, normalizes and stores one message. Throws ValidationError on bad input. */
  ingest(scope: ScopeDescriptor, input: unknown): Promise<IngestResult>;
  /**
   * Stores many already-normalized episodes of one scope in one transaction; duplicates by
   * external id are skipped. Use {@link EpisodeService.normalize} first. `ids` are the stored
   * episodes' ids in the order given (duplicates left out), for callers that attach vectors.
   */
  ingestMany(scope: ScopeDescriptor, episodes: readonly NewEpisode[]): Promise<{ inserted: number; duplicates: number; scope: Scope; ids: string[] }>;
  /**
   * Validation and normalization alone, for callers that batch (the importer). `checkTime`
   * refuses a timestamp more than 5 minutes ahead of the clock or before 1970 (outsiders' times).
   */
  normalize(input: unknown, defaultChannel: string, options?: { readonly checkTime?: boolean }): NewEpisode;
  /**
   * Stores one turn of a scope already known (the agent's hot path: no scope upsert), idempotent
   * on the external id. Only the person's turns move the scope's `lastMessageAt`, which is what
   * sleep's idle detection reads. Throws ValidationError on bad input.
   */
  recordTurn(scopeId: string, input: unknown, defaultChannel: string): Promise<IngestResult>;
  /** One episode of the scope, or null (an id of another scope is not found). */
  get(scopeId: string, id: string): Promise<Episode | null>;
  /**
   * Times of the scope's turns by `role` at or after `since`, newest first, at most `limit`: what
   * the agent's reply limits count (stored turns, so a restart forgets nothing).
   */
  turnTimesSince(scopeId: string, role: 'user' | 'agent', since: Date, limit: number): Promise<Date[]>;
}

/** The latest lastMessageAt that can be true at `now`; a later one is replaced (scope-repository touch). */
const ceilingOf = (now: Date) => new Date(now.getTime() + MAX_FUTURE_SKEW_MS);

export function createEpisodeService(deps: EpisodeServiceDeps): EpisodeService {
  const clock = deps.clock ?? (() => new Date());
  const log = deps.logger.child({ component: 'episodes' });

  /**
   * Moves the scope's time forward once its episodes are stored. The episodes are committed by
   * then, so a failure here (the disk filled up between the two writes) must not be reported as
   * the batch not stored: a caller that counts what it stored (the importer) would say the batch
   * was lost while it is there. The time catches up with the next message or the same batch sent
   * again (see above); the failure is logged, as the storage explains it.
   */
  async function touchAfterStoring(scopeId: string, at: Date, ceiling: Date): Promise<void> {
    try {
      await deps.scopes.touch(scopeId, at, ceiling);
    } catch (error) {
      const explained = explainStorageFailure(error, deps.database);
      if (!explained) throw error;
      log.warn("stored the episodes, but could not move the scope's time forward; it catches up with the next message", {
        scopeId,
        problem: explained.message,
      });
    }
  }

  async function store(scope: ScopeDescriptor, episodes: readonly NewEpisode[]) {
    const key = normalizeScopeKey(scope.key);
    try {
      const row = await deps.scopes.ensure({ ...scope, key });
      const result = await deps.episodes.insertMany(row.id, episodes);
      let latest = result.inserted.reduce<Date | undefined>((max, e) => (!max || e.timestamp > max ? e.timestamp : max), undefined);
      // Messages already stored: a process that stopped between storing a batch and this write
      // left the scope's time behind; it catches up when the batch is sent again (touch only ever
      // moves the time forward, so a redelivered old message changes nothing).
      if (result.duplicates > 0) {
        const stored = await deps.episodes.latestTimestamp(row.id);
        if (stored && (!latest || stored > latest)) latest = stored;
      }
      // Never ahead of the clock (timestamps within the allowed skew are stored as given), and a
      // time an older version stored in the future (year 9999) is replaced: see touch.
      const now = clock();
      if (latest) await touchAfterStoring(row.id, latest > now ? now : latest, ceilingOf(now));
      log.debug('stored episodes', { scope: scope.key, inserted: result.inserted.length, duplicates: result.duplicates });
      return { row, result };
    } catch (error) {
      throw explainStorageFailure(error, deps.database) ?? error;
    }
  }

  return {
    normalize: (input, defaultChannel, options) =>
      normalizeEpisode(input, { maxBytes: deps.maxEpisodeBytes, defaultChannel, now: clock(), checkTime: options?.checkTime ?? false }),
    async ingest(scope, input) {
      const episode = normalizeEpisode(input, { maxBytes: deps.maxEpisodeBytes, defaultChannel: scope.channel, now: clock() });
      const { row, result } = await store(scope, [episode]);
      if (result.inserted.length > 0) return { episode: result.inserted[0] ?? null, duplicate: false };
      const existing = episode.externalId ? await deps.episodes.findByExternalId(row.id, episode.externalId) : null;
      return { episode: existing, duplicate: true };
    },
    async recordTurn(scopeId, input, defaultChannel) {
      // A live channel's time comes from its platform (or the agent's clock) and is kept; only the
      // scope's idle clock is held at now, so a clock behind the platform's cannot freeze it.
      const now = clock();
      const episode = normalizeEpisode(input, { maxBytes: deps.maxEpisodeBytes, defaultChannel, now });
      const result = await deps.episodes.insertMany(scopeId, [episode]);
      const inserted = result.inserted[0];
      if (inserted) {
        if (episode.role === 'user') await deps.scopes.touch(scopeId, episode.timestamp > now ? now : episode.timestamp, ceilingOf(now));
        return { episode: inserted, duplicate: false };
      }
      return { episode: episode.externalId ? await deps.episodes.findByExternalId(scopeId, episode.externalId) : null, duplicate: true };
    },
    get: (scopeId, id) => deps.episodes.get(scopeId, id),
    turnTimesSince: (scopeId, role, since, limit) => deps.episodes.timesSince(scopeId, role, since, limit),
    async ingestMany(scope, episodes) {
      const { row, result } = await store(scope, episodes);
      return { inserted: result.inserted.length, duplicates: result.duplicates, scope: row, ids: result.inserted.map((e) => e.id) };
    },
  };
}
