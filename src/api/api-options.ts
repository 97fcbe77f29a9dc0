/**
 * What the admin API is given (createApiServer in server.ts): its token and logger, and the
 * domain services its route groups use, each group taking the part it needs.
 */
import type { ScopeArchive } from '../export/scope-archive';
import type { McpDoorServices } from '../mcp/memory-server';
import type { AuditLog } from '../memory/audit/audit-log';
import type { EmbeddingWorker } from '../memory/embeddings/embedding-worker';
import type { EpisodeLog } from '../memory/episodes/episode-log';
import type { ForgetService } from '../memory/forget/forget-service';
import type { MemoryCatalog } from '../memory/memories/memory-catalog';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import type { DigestScheduleService } from '../memory/scopes/digest-schedule';
import type { ScopeControls } from '../memory/scopes/scope-controls';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import type { ScopeTokens } from '../memory/scopes/scope-tokens';
import type { StoreStats } from '../memory/store-stats';
import type { IndexGuard } from '../memory/vectors/index-guard';
import type { Logger } from '../shared/logger';
import type { Metrics } from '../shared/metrics';
import type { PollHealth } from '../shared/poll-health';
import type { GivenUpMessages } from '../sleep/given-up';
import type { SleepScheduler } from '../sleep/scheduler';
import type { SleepService } from '../sleep/sleep-service';
import type { MemoryCorrections } from '../memory/memories/memory-corrections';
import type { LinkRouteDeps } from './link-routes';
import type { WebRouteServices } from './web-routes';

/** What the admin API is given: its token and logger, and the services its routes use. */
export interface ApiOptions {
  readonly token: string;
  readonly logger: Logger;
  readonly directory: Pick<ScopeDirectory, 'find' | 'require' | 'list'>;
  readonly catalog: Pick<MemoryCatalog, 'list' | 'detail'>;
  readonly episodeLog: Pick<EpisodeLog, 'list'>;
  readonly auditLog: Pick<AuditLog, 'latest'>;
  readonly archive: ScopeArchive;
  readonly forget: Pick<ForgetService, 'forgetMemory' | 'purgeScope'>;
  readonly search: HybridSearch;
  /** The dry run of `POST /scopes/:id/sleep`. */
  readonly sleep: Pick<SleepService, 'planNextBatch'>;
  readonly scheduler: Pick<SleepScheduler, 'consolidateNow'>;
  /** `POST /scopes/:id/sleep` with `retryGivenUp`: the messages consolidation gave up on, tried again (audited). */
  readonly givenUp?: Pick<GivenUpMessages, 'retry' | 'count'>;
  /** A scope's digest time, on/off and time zone (GET/PATCH /scopes/:id/settings). */
  readonly digestSchedule: Pick<DigestScheduleService, 'get' | 'set'>;
  /** A scope's capped mode, sleep window and daily budgets (the same routes). */
  readonly scopeControls: Pick<ScopeControls, 'get' | 'set'>;
  readonly storeStats: Pick<StoreStats, 'ping' | 'counts'>;
  readonly indexGuard: Pick<IndexGuard, 'state'>;
  readonly metrics: Pick<Metrics, 'render'>;
  readonly embeddingWorker: Pick<EmbeddingWorker, 'pending'>;
  /** The time zone of Markdown exports' daily files when a scope has none of its own. */
  readonly timeZone: string;
  /** Whether the Telegram bot is still polling, when Telegram runs (reported by /readyz). */
  readonly telegramPolling?: () => PollHealth;
  /** Where import bodies are spooled (encrypted, removed after the answer); the system's temporary folder by default. */
  readonly spoolDir?: string;
  /**
   * The MCP endpoint (`/mcp`, api/mcp-route.ts): the services its tools use and the people's
   * tokens it accepts besides the admin token. No endpoint when absent.
   */
  readonly mcp?: { readonly services: McpDoorServices; readonly tokens: Pick<ScopeTokens, 'verify'> };
  /** Linked identities (`/links`, api/link-routes.ts); no routes when absent. */
  readonly links?: LinkRouteDeps;
  /** The memory page's data (`/app/login`, `/app/api/*`, api/web-routes.ts); no routes when absent. */
  readonly web?: WebRouteServices;
  /** Correcting and pinning a memory (`PATCH /scopes/:id/memories/:mid`); no route when absent. */
  readonly corrections?: Pick<MemoryCorrections, 'correct' | 'pin'>;
}
