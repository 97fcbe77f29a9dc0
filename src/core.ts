/**
 * The storage-backed services every entry point needs (the service in main.ts, each CLI
 * command): the database, the repositories, the episode service, and the retrieval stack
 * (embedder, vector index and its guard, the embedding worker, hybrid search). Channels, the
 * scheduler and the HTTP server are added by main.ts on top of this.
 */
import path from 'node:path';
import type { Config } from './config/load-config';
import { createLanguageModel } from './llm/create-language-model';
import type { LanguageModel } from './llm/language-model';
import { withPromptRedaction } from './llm/prompt-redaction';
import { withUsageRecording } from './llm/usage-recorder';
import { createForgetService, FORGET_PENDING_FILE, type ForgetService } from './memory/forget/forget-service';
import { createEpisodeEdits, type EpisodeEdits } from './memory/episodes/episode-edits';
import { createConversationStore, type ConversationStore } from './memory/conversations/conversation-store';
import { createMemoryStore, type MemoryStore } from './memory/memories/memory-store';
import { createConflictBook, type ConflictBook } from './memory/memories/conflict-book';
import { createMemoryCorrections, type MemoryCorrections } from './memory/memories/memory-corrections';
import { createSoulReader, type SoulReader } from './memory/profiles/soul';
import { createSleepScheduler, type SleepScheduler } from './sleep/scheduler';
import { createSleepService, type SleepService } from './sleep/sleep-service';
import { createGivenUpMessages, type GivenUpMessages } from './sleep/given-up';
import { createEmbedder } from './vectors/embedders/create-embedder';
import { readExportView } from './export/export-view';
import type { Embedder } from './memory/embeddings/embedder';
import { createEmbeddingWorker, type EmbeddingWorker } from './memory/embeddings/embedding-worker';
import { createEpisodeService, type EpisodeService } from './memory/episodes/episode-service';
import { createHybridSearch, type HybridSearch } from './memory/retrieval/hybrid-search';
import { createContextRetriever, type ContextRetriever } from './memory/retrieval/retrieve-context';
import { createVectorIndex } from './vectors/indexes/create-vector-index';
import { createIndexGuard, type IndexGuard } from './memory/vectors/index-guard';
import type { VectorIndex } from './memory/vectors/vector-index';
import { createScopeArchive, type ScopeArchive } from './export/scope-archive';
import { createAuditLog, type AuditLog } from './memory/audit/audit-log';
import { createDigestBook, type DigestBook } from './memory/digests/digest-book';
import { createReminderBook, type ReminderBook } from './memory/reminders/reminder-book';
import { createEpisodeLog, type EpisodeLog } from './memory/episodes/episode-log';
import { createMemoryCatalog, type MemoryCatalog } from './memory/memories/memory-catalog';
import { createProfileReader, type ProfileReader } from './memory/profiles/profile-reader';
import { createWebSessions, type WebSessions } from './memory/web/web-sessions';
import { createScopeDirectory, type ScopeDirectory } from './memory/scopes/scope-directory';
import { createIdentityScopes, createPersonDirectory, type IdentityScopes, type PersonDirectory } from './memory/scopes/identity-links';
import { createLinkCodes, type LinkCodes } from './memory/scopes/link-codes';
import { createDigestScheduleService, type DigestScheduleService } from './memory/scopes/digest-schedule';
import { createScopeControls, type ScopeControls } from './memory/scopes/scope-controls';
import { policyDefaults } from './memory/scopes/scope-policy';
import { createScopeTokens, type ScopeTokens } from './memory/scopes/scope-tokens';
import { showSearchResults } from './memory/output-filter';
import type { Logger } from './shared/logger';
import { createStoreStats, type StoreStats } from './memory/store-stats';
import { createMetrics, type Metrics } from './shared/metrics';
import { openDatabase, type Database } from './storage/database';
import { createEpisodeRepository, type EpisodeRepository } from './storage/episode-repository';
import { createFullTextIndex, type FullTextIndex } from './storage/full-text';
import { createMemoryRepository, type MemoryRepository } from './storage/memory-repository';
import { createScopeRepository, type ScopeRepository } from './storage/scope-repository';
import { createWebhookNonceRepository, type WebhookNonceRepository } from './storage/webhook-nonce-repository';
import { createTelegramUpdateRepository, type TelegramUpdateRepository } from './storage/telegram-update-repository';

export interface Core {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Database;
  readonly scopes: ScopeRepository;
  readonly episodes: EpisodeRepository;
  readonly memories: MemoryRepository;
  readonly fullText: FullTextIndex;
  readonly episodeService: EpisodeService;
  readonly embedder: Embedder;
  readonly vectorIndex: VectorIndex;
  readonly indexGuard: IndexGuard;
  readonly embeddingWorker: EmbeddingWorker;
  readonly search: HybridSearch;
  /** Counters and histograms recorded in this process (GET /metrics adds database counts). */
  readonly metrics: Metrics;
  /** Context for a reply: relevant memories and recent episodes within a token budget. */
  readonly context: ContextRetriever;
  /** The configured chat model, recording every call's token usage. */
  readonly llm: LanguageModel;
  /** The sleep work (consolidation, decay, digests) of one scope. */
  readonly sleep: SleepService;
  /** Forgetting at the owner's request: rows, full-text index, vectors, soul and digests. */
  readonly forget: ForgetService;
  /** The person's edits of messages they sent (channels call it; memory/episodes/episode-edits.ts). */
  readonly edits: EpisodeEdits;
  /** Decides when sleep work runs; started by main.ts only (the CLI runs jobs directly). */
  readonly scheduler: SleepScheduler;
  /** Messages consolidation gave up on: how many, and trying them again (CLI `sleep --retry`, the admin API). */
  readonly givenUp: GivenUpMessages;
  /** The domain's read side and services for the layers above it (channels, agent, API, CLI). */
  readonly directory: ScopeDirectory;
  /**
   * The directory of the doors people talk through (channels, the agent, `cli chat`): a message's
   * scope is the one its identity resolves to (the owner's identities, linked identities).
   */
  readonly personDirectory: PersonDirectory;
  /** Which scope each identity speaks into: join (merging scopes), unlink, list, resume a merge. */
  readonly identities: IdentityScopes;
  /** One-time codes that pair two of a person's identities (`/link`). */
  readonly linkCodes: LinkCodes;
  readonly catalog: MemoryCatalog;
  /** Open contradictions: list them, and settle one when the person says which side is true. */
  readonly conflicts: ConflictBook;
  /** The person's and the operator's own say over a memory: correct it (a new version), pin it. */
  readonly corrections: MemoryCorrections;
  readonly episodeLog: EpisodeLog;
  readonly digestBook: DigestBook;
  /** Reminders people asked for: set, listed and cancelled by the agent and /reminders, sent by the channels. */
  readonly reminders: ReminderBook;
  /** A scope's digest time, on/off and time zone, as its person or an operator sets them (audited). */
  readonly digestSchedule: DigestScheduleService;
  /** A scope's capped mode, sleep window and daily budgets, as its person or an operator sets them (audited). */
  readonly scopeControls: ScopeControls;
  readonly auditLog: AuditLog;
  /** A person's own tokens for the MCP endpoint: each opens one scope (issued, listed, revoked, verified). */
  readonly scopeTokens: ScopeTokens;
  /** The memory page in a browser: single-use links (`/web`, `cli web-link`) and the sessions they open. */
  readonly webSessions: WebSessions;
  readonly profiles: ProfileReader;
  readonly archive: ScopeArchive;
  /** Whether the database answers, its triggers, and the counts /metrics reports. */
  readonly storeStats: StoreStats;
  /** The memory domain's service for writes from above it: remember, reinforce, revise, goals. */
  readonly memoryStore: MemoryStore;
  /** Conversations and their working memory (the agent's state between turns). */
  readonly conversations: ConversationStore;
  /** The soul as a prompt reads it. */
  readonly soul: SoulReader;
  /** The webhook signatures already accepted (a replay is refused). */
  readonly webhookNonces: WebhookNonceRepository;
  /** Telegram updates received through the webhook, handled once across replicas. */
  readonly telegramUpdates: TelegramUpdateRepository;
  close(): Promise<void>;
}

/** Replacements for tests and evaluations (a deterministic embedder, an in-memory index). */
export interface CoreOverrides {
  readonly embedder?: Embedder;
  readonly vectorIndex?: VectorIndex;
  readonly llm?: LanguageModel;
  /**
   * The time the agent and the sleep scheduler read (default: the wall clock), so a simulation can
   * replay months of conversations and nights in minutes.
   */
  readonly clock?: () => Date;
}

/** The embedded store's files with their journals and write-ahead logs: nothing but the store may write them. */
function storeFiles(config: Config): string[] {
  const files = [config.database.provider === 'sqlite' ? config.database.file : null, config.vectors.store === 'sqlite-vec' ? config.vectors.file : null];
  return files.flatMap((file) => (file ? [file, `${file}-wal`, `${file}-shm`, `${file}-journal`] : []));
}

export async function createCore(config: Config, logger: Logger, overrides: CoreOverrides = {}): Promise<Core> {
  const db = await openDatabase({ database: config.database, logger: logger.child({ component: 'storage' }) });
  const scopes = createScopeRepository(db.prisma);
  const directory = createScopeDirectory(db.prisma, scopes);
  const identities = createIdentityScopes({ prisma: db.prisma, directory, owner: config.owner, mergePauseMs: config.link.mergePauseMs });
  const episodes = createEpisodeRepository(db.prisma);
  const memories = createMemoryRepository(db.prisma);
  const fullText = createFullTextIndex(db.prisma, db.provider);
  const embedder = overrides.embedder ?? createEmbedder(config.embedder, { logger: logger.child({ component: 'embedder' }), timeoutMs: config.llm.timeoutMs });
  const vectorIndex = overrides.vectorIndex ?? createVectorIndex(config.vectors, embedder.dimension);
  const indexGuard = createIndexGuard({ index: vectorIndex, embedder, prisma: db.prisma });
  const state = await indexGuard.init();
  if (state.status === 'mismatch') {
    logger.warn('vector search is off until the index is rebuilt: run `npm run cli -- reindex`', { stored: state.stored, configured: state.configured });
  } else if (state.status === 'unavailable') {
    logger.warn('the vector index is unavailable: searching by keywords only; episodes are stored and get their vectors when it answers', {
      reason: state.reason,
    });
  }
  const metrics = createMetrics({
    nocturne_search_seconds: 'Hybrid search latency, query embedding included.',
    nocturne_embedding_set_aside_total: 'Episodes and memories the embedder kept refusing, set aside so the queue goes on (`doctor` lists them).',
  });
  const embeddingWorker = createEmbeddingWorker({ prisma: db.prisma, embedder, index: vectorIndex, guard: indexGuard, logger, metrics });
  const episodeService = createEpisodeService({
    scopes,
    episodes,
    logger,
    maxEpisodeBytes: config.ingest.maxEpisodeBytes,
    database: config.database,
    ...(overrides.clock && { clock: overrides.clock }),
  });
  const hybrid = createHybridSearch({
    prisma: db.prisma,
    episodes,
    memories,
    fullText,
    embedder,
    index: vectorIndex,
    guard: indexGuard,
    logger,
    contextRadius: 2,
  });
  // The domain boundary of search: every caller (agent prompt, memory tools, CLI, admin API,
  // sleep) gets the results' texts through the output filter, never a stored secret.
  const search: HybridSearch = {
    async search(query) {
      const started = performance.now();
      try {
        const outcome = await hybrid.search(query);
        return { ...outcome, results: showSearchResults(outcome.results) };
      } finally {
        metrics.observe('nocturne_search_seconds', (performance.now() - started) / 1000, { strategy: query.strategy ?? 'hybrid' });
      }
    },
  };
  const context = createContextRetriever({ prisma: db.prisma, search, logger });
  // Every prompt of every caller (replies, compaction, sleep) is redacted of secrets before it
  // leaves: the one model every service below is given is wrapped here (src/llm/prompt-redaction.ts).
  const model = overrides.llm ?? createLanguageModel(config.llm, { logger: logger.child({ component: 'llm' }) });
  const llm = withUsageRecording(withPromptRedaction(model), db.prisma, logger);
  const sleep = createSleepService({
    prisma: db.prisma,
    llm,
    search,
    embedder,
    index: vectorIndex,
    guard: indexGuard,
    logger,
    consolidator: { maxAttempts: config.sleep.maxAttempts, defaultTimeZone: config.timeZone },
    soul: { maxTokens: config.sleep.soulMaxTokens, defaultTimeZone: config.timeZone },
  });
  const forget = createForgetService({
    prisma: db.prisma,
    index: vectorIndex,
    fullText,
    logger,
    exportsDir: path.join(config.dataDir, 'exports'),
    readExportView,
    protectedFiles: storeFiles(config),
    pendingFile: path.join(config.dataDir, FORGET_PENDING_FILE),
    soul: { maxTokens: config.sleep.soulMaxTokens, defaultTimeZone: config.timeZone },
  });
  // A forget killed after its commit left the full-text purge, the checkpoints or vector deletes undone.
  await forget.repair();
  const scheduler = createSleepScheduler({
    prisma: db.prisma,
    jobs: sleep,
    logger,
    ...(overrides.clock && { clock: overrides.clock }),
    options: { ...config.sleep, defaultTimeZone: config.timeZone },
  });
  const memoryStore = createMemoryStore({ prisma: db.prisma, index: vectorIndex, embedder, logger });
  const conversations = createConversationStore({ prisma: db.prisma, logger });
  const soul = createSoulReader(db.prisma);
  return {
    config,
    logger,
    db,
    scopes,
    episodes,
    memories,
    fullText,
    episodeService,
    embedder,
    vectorIndex,
    indexGuard,
    embeddingWorker,
    search,
    metrics,
    context,
    llm,
    sleep,
    forget,
    scheduler,
    givenUp: createGivenUpMessages({ prisma: db.prisma, maxAttempts: config.sleep.maxAttempts, logger, ...(overrides.clock && { clock: overrides.clock }) }),
    directory,
    personDirectory: createPersonDirectory(directory, identities),
    identities,
    linkCodes: createLinkCodes({ prisma: db.prisma, identities }),
    edits: createEpisodeEdits({ directory, routedScopeId: (key) => identities.linkedScopeId(key), episodes: episodeService, forget }),
    catalog: createMemoryCatalog(db.prisma),
    conflicts: createConflictBook({ prisma: db.prisma, soul: { maxTokens: config.sleep.soulMaxTokens, defaultTimeZone: config.timeZone } }),
    corrections: createMemoryCorrections(db.prisma, { soul: { maxTokens: config.sleep.soulMaxTokens, defaultTimeZone: config.timeZone } }),
    episodeLog: createEpisodeLog(episodes),
    digestBook: createDigestBook(db.prisma, config.timeZone),
    reminders: createReminderBook(db.prisma, config.timeZone),
    digestSchedule: createDigestScheduleService(
      db.prisma,
      { digestTime: config.sleep.digestTime, timeZone: config.timeZone, soulMaxTokens: config.sleep.soulMaxTokens },
      overrides.clock,
    ),
    scopeControls: createScopeControls(db.prisma, policyDefaults(config), overrides.clock),
    auditLog: createAuditLog(db.prisma),
    scopeTokens: createScopeTokens(db.prisma),
    webSessions: createWebSessions(db.prisma),
    profiles: createProfileReader(db.prisma),
    archive: createScopeArchive(db.prisma, config.ingest),
    storeStats: createStoreStats(db.prisma, db.provider, db.appliedMigrations),
    memoryStore,
    conversations,
    soul,
    webhookNonces: createWebhookNonceRepository(db.prisma),
    telegramUpdates: createTelegramUpdateRepository(db.prisma),
    async close() {
      await scheduler.stop();
      await embeddingWorker.stop();
      await llm.close();
      await embedder.close();
      await vectorIndex.close();
      await db.close();
    },
  };
}
