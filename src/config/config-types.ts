/**
 * The shape of Nocturne's configuration: the typed settings loadConfig (load-config.ts) builds
 * from the environment and hands to the composition root, one interface per part.
 */
import type { SleepWindow } from '../shared/local-time';
import type { Env } from './schema';

/** The typed configuration the composition root hands to every component. */
export interface Config {
  readonly dataDir: string;
  readonly database:
    | { readonly provider: 'sqlite'; readonly url: string; readonly file: string; readonly encryptionKey?: string }
    | { readonly provider: 'postgres'; readonly url: string };
  readonly vectors:
    | { readonly store: 'sqlite-vec'; readonly file: string; readonly encryptionKey?: string; readonly scanMemoryBytes?: number }
    | { readonly store: 'qdrant'; readonly url: string; readonly apiKey?: string };
  readonly embedder: { readonly kind: 'local' | 'ollama'; readonly model: string; readonly ollamaHost: string; readonly dimension?: number };
  readonly llm: {
    readonly provider: 'anthropic' | 'ollama';
    readonly model: string;
    readonly timeoutMs: number;
    readonly anthropicApiKey?: string;
    readonly anthropicBaseUrl?: string;
    readonly ollamaHost: string;
  };
  readonly telegram?: TelegramConfig;
  /** What becomes of photos, documents and voice messages (Telegram). */
  readonly media: MediaConfig;
  readonly adminToken?: string;
  /** Where the admin API listens (served only when adminToken is set). */
  readonly api: { readonly host: string; readonly port: number };
  /** The memory page (docs/channels.md, "The memory page"), served by the admin API's listener. */
  readonly web: WebConfig;
  /** The webhook channel, when WEBHOOK_SECRET is set. */
  readonly webhook?: { readonly secret: string; readonly host: string; readonly port: number; readonly callbackHosts: readonly string[] };
  /** The terminal conversation: `auto` runs it when no Telegram token is set and stdin is a TTY. */
  readonly terminal: { readonly mode: Env['TERMINAL']; readonly user: string };
  /**
   * The owner of a personal deployment on each channel: every identity named here talks into one
   * scope (memory/scopes/identity-links.ts) from the first message on.
   */
  readonly owner: OwnerConfig;
  /** Linking identities: the merge's test pause (0 in production). */
  readonly link: { readonly mergePauseMs: number };
  readonly ingest: { readonly maxEpisodeBytes: number };
  readonly timeZone: string;
  /** The sleep scheduler; per-scope overrides live in Scope.settings (see src/sleep/scope-settings.ts). */
  readonly sleep: SleepConfig;
  /** The agent loop (src/agent/): reply budgets, conversation end and compaction. */
  readonly agent: AgentConfig;
  /** Reminder delivery: how often due reminders are looked for, and after how long one is sent marked late. */
  readonly reminders: { readonly checkMs: number; readonly lateAfterMs: number };
  readonly log: { readonly level: Env['LOG_LEVEL']; readonly format: Env['LOG_FORMAT']; readonly file?: string };
  /** Every secret value, so the logger can redact them wherever they appear. */
  readonly secrets: readonly string[];
}

/** PUBLIC_URL, WEB_INIT_DATA_MAX_AGE_SECONDS and TELEGRAM_WEBAPP_SHORT_NAME. */
export interface WebConfig {
  /** Where people reach the page, without a trailing slash (PUBLIC_URL, else http://127.0.0.1:API_PORT). */
  readonly publicUrl: string;
  /** Whether {@link publicUrl} is https: cookies are Secure, and Telegram accepts it for a Mini App. */
  readonly https: boolean;
  readonly initDataMaxAgeSeconds: number;
  /** The Mini App's short name at @BotFather, for t.me direct links from groups. */
  readonly webAppShortName?: string;
}

/** OWNER_TELEGRAM_USER_ID, OWNER_TERMINAL_USER and OWNER_WEBHOOK_SENDER, each optional. */
export interface OwnerConfig {
  readonly telegramUserId?: string;
  readonly terminalUser?: string;
  /** `<source>` or `<source>:<user>`. */
  readonly webhookSender?: string;
}

/** Limits and helpers of media reading (src/channels/telegram/media/). */
export interface MediaConfig {
  /** MEDIA_MAX_FILE_MB in bytes: the largest file downloaded. */
  readonly maxFileBytes: number;
  /** MEDIA_VISION: whether photos are shown to the model. */
  readonly vision: boolean;
  readonly descriptionMaxChars: number;
  readonly documentMaxPages: number;
  readonly documentMaxParts: number;
  /** The transcription server, when TRANSCRIPTION_URL is set. */
  readonly transcription?: { readonly url: string; readonly model: string; readonly apiKey?: string };
}

/** The Telegram channel, when TELEGRAM_BOT_TOKEN is set. */
export interface TelegramConfig {
  readonly token: string;
  readonly apiRoot: string;
  readonly allowedUsers: readonly number[];
  readonly groups: boolean;
  /**
   * How updates arrive: long polling (one consumer per bot), or a webhook Telegram posts to,
   * served on the webhook listener (API_HOST:WEBHOOK_PORT) at the path of `url`.
   */
  readonly mode: TelegramMode;
  /** The polling heartbeat (polling mode only): its file (DATA_DIR/telegram-heartbeat) and how old it may get. */
  readonly heartbeat: { readonly file: string; readonly maxAgeSeconds: number };
}

/** Polling, or the webhook with its public URL, the path served, and the secret Telegram sends back. */
export type TelegramMode =
  | { readonly kind: 'polling' }
  | { readonly kind: 'webhook'; readonly url: string; readonly path: string; readonly secret: string; readonly host: string; readonly port: number };

/** Settings of the sleep scheduler (src/sleep/scheduler.ts); cron expressions are already validated. */
export interface SleepConfig {
  readonly enabled: boolean;
  readonly consolidateCron: string;
  readonly decayCron: string;
  /** How often due digests are looked for; not a setting, since DIGEST_TIME says when they are due. */
  readonly digestCheckCron: string;
  readonly idleMinutes: number;
  readonly minEpisodes: number;
  /** SLEEP_MAX_WAIT_HOURS: a run is due with fewer episodes before the person's oldest message waits longer. */
  readonly maxWaitHours: number;
  /** SLEEP_WINDOW_START / SLEEP_WINDOW_HOURS: the nightly window of scopes that set none. */
  readonly defaultSleepWindow: SleepWindow;
  readonly maxAttempts: number;
  /** Tokens per scope per local day; 0 means unlimited. */
  readonly dailyTokenBudget: number;
  /** HH:MM, local to each scope. */
  readonly digestTime: string;
  /** Size of the soul in estimated tokens (SOUL_MAX_TOKENS; see src/memory/profiles/soul.ts). */
  readonly soulMaxTokens: number;
}

/** The compaction strategies of seed 002 (src/agent/compaction-strategies.ts). */
export type CompactionStrategyName = Env['AGENT_COMPACTION_STRATEGY'];

/** Settings of the agent loop (src/agent/); every budget in estimated tokens. */
export interface AgentConfig {
  /** Window budgeted per reply (prompt + answer); absent: the model's own context window. */
  readonly contextTokens?: number;
  readonly memoryTokens: number;
  readonly summaryTokens: number;
  readonly goalTokens: number;
  /** Turns kept in full by compaction. */
  readonly recentTurns: number;
  readonly answerTokens: number;
  /** 0 means conversations are only ended explicitly. */
  readonly idleEndMinutes: number;
  /** AGENT_END_SUMMARY: a model-written summary of every ended conversation (uncapped scopes). */
  readonly endSummary: boolean;
  readonly compactionStrategy: CompactionStrategyName;
  readonly compactionCooldownMs: number;
  /** REPLY_RATE_PER_MINUTE: replies to one scope in any 60 s (0 = unlimited). */
  readonly replyRatePerMinute: number;
  /** REPLY_DAILY_BUDGET: replies to one scope per local day (0 = unlimited). */
  readonly replyDailyBudget: number;
}
