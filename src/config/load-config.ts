/**
 * Reads the configuration once, from the environment and an optional `.env` file, into a typed
 * object. This is the only place in Nocturne that reads `process.env`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { AppError } from '../shared/errors';
import type { SleepWindow } from '../shared/local-time';
import { envSchema, type Env } from './schema';

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

/** One problem with one setting, printed to the person who has to fix it. */
export interface ConfigIssue {
  readonly setting: string;
  readonly problem: string;
}

/** Thrown when the configuration is invalid; carries every problem at once. */
export class ConfigError extends AppError {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(
      `Invalid configuration (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n` +
        issues.map((issue) => `  - ${issue.setting}: ${issue.problem}`).join('\n'),
      {
        code: 'config.invalid',
        category: 'user',
        hint: 'Fix the settings above in the environment or in .env (see .env.example and the README).',
      },
    );
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

export interface LoadConfigOptions {
  /** The environment to read; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** A .env file to read first (the environment wins); defaults to ./.env when it exists. */
  envFile?: string | false;
  /** Base for relative paths; defaults to the current directory. */
  cwd?: string;
}

function readEnvFile(file: string): Record<string, string> {
  try {
    return parseEnv(fs.readFileSync(file, 'utf8')) as Record<string, string>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError([{ setting: file, problem: `cannot be read: ${(error as Error).message}` }]);
  }
}

/** Empty strings count as unset, the way people leave `KEY=` lines in .env files. */
function withoutEmpty(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') out[key] = value;
  return out;
}

function describeIssue(issue: { path: PropertyKey[]; message: string; code: string }, raw: Record<string, string>): ConfigIssue {
  const setting = String(issue.path[0] ?? '(config)');
  const given = raw[setting];
  const shown = given === undefined || /TOKEN|KEY|SECRET/.test(setting) ? '' : ` (got "${given}")`;
  return { setting, problem: `${issue.message}${shown}` };
}

/**
 * Parses and validates the configuration; throws {@link ConfigError} listing every problem.
 * Cross-field rules (a PostgreSQL URL for postgres, a Qdrant URL for qdrant) are checked too.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const cwd = options.cwd ?? process.cwd();
  const fileEnv = options.envFile === false ? {} : readEnvFile(path.resolve(cwd, options.envFile ?? '.env'));
  const raw = withoutEmpty({ ...fileEnv, ...(options.env ?? process.env) });
  const known = Object.fromEntries(
    Object.keys(envSchema.shape)
      .filter((k) => k in raw)
      .map((k) => [k, raw[k]]),
  );
  const parsed = envSchema.safeParse(known);
  const issues: ConfigIssue[] = parsed.success ? [] : parsed.error.issues.map((issue) => describeIssue(issue, raw));
  issues.push(...crossFieldIssues(known as Record<string, string | undefined>));
  if (!parsed.success || issues.length > 0) throw new ConfigError(issues);
  const env = parsed.data;

  const dataDir = path.resolve(cwd, env.DATA_DIR);
  let database: Config['database'];
  if (env.DB_PROVIDER === 'postgres') {
    database = { provider: 'postgres', url: env.DATABASE_URL ?? '' };
  } else {
    const url = env.DATABASE_URL ?? `file:${path.join(dataDir, 'nocturne.db')}`;
    const file = path.resolve(cwd, url.replace(/^file:/, ''));
    database = { provider: 'sqlite', url: `file:${file}`, file, ...(env.DATABASE_ENCRYPTION_KEY && { encryptionKey: env.DATABASE_ENCRYPTION_KEY }) };
  }
  const vectors: Config['vectors'] =
    env.VECTOR_STORE === 'qdrant'
      ? { store: 'qdrant', url: env.QDRANT_URL ?? '', apiKey: env.QDRANT_API_KEY }
      : {
          store: 'sqlite-vec',
          file: path.join(dataDir, 'vectors.db'),
          scanMemoryBytes: env.VECTOR_SCAN_MEMORY_MB * 1024 * 1024,
          ...(env.DATABASE_ENCRYPTION_KEY && { encryptionKey: env.DATABASE_ENCRYPTION_KEY }),
        };
  const provider = env.LLM_PROVIDER ?? (env.ANTHROPIC_API_KEY ? 'anthropic' : 'ollama');

  const secrets = [
    env.ANTHROPIC_API_KEY,
    env.TELEGRAM_BOT_TOKEN,
    env.TELEGRAM_WEBHOOK_SECRET,
    env.ADMIN_TOKEN,
    env.WEBHOOK_SECRET,
    env.QDRANT_API_KEY,
    env.DATABASE_ENCRYPTION_KEY,
    env.TRANSCRIPTION_API_KEY,
    passwordOf(env.DATABASE_URL),
  ].filter((value): value is string => value !== undefined && value !== '');

  return {
    dataDir,
    database,
    vectors,
    embedder: { kind: env.EMBEDDER, model: env.EMBEDDING_MODEL, ollamaHost: env.OLLAMA_HOST, dimension: env.EMBEDDING_DIMENSION },
    llm: {
      provider,
      model: env.LLM_MODEL ?? (provider === 'anthropic' ? 'claude-sonnet-4-6' : 'llama3.2'),
      timeoutMs: env.LLM_TIMEOUT_MS,
      anthropicApiKey: env.ANTHROPIC_API_KEY,
      anthropicBaseUrl: env.ANTHROPIC_BASE_URL,
      ollamaHost: env.OLLAMA_HOST,
    },
    telegram: env.TELEGRAM_BOT_TOKEN
      ? {
          token: env.TELEGRAM_BOT_TOKEN,
          apiRoot: env.TELEGRAM_API_ROOT,
          allowedUsers: env.TELEGRAM_ALLOWED_USERS,
          groups: env.TELEGRAM_GROUPS,
          mode: telegramMode(env),
          heartbeat: { file: path.join(dataDir, 'telegram-heartbeat'), maxAgeSeconds: env.TELEGRAM_HEARTBEAT_MAX_AGE },
        }
      : undefined,
    media: {
      maxFileBytes: env.MEDIA_MAX_FILE_MB * 1024 * 1024,
      vision: env.MEDIA_VISION === 'auto',
      descriptionMaxChars: env.MEDIA_DESCRIPTION_MAX_CHARS,
      documentMaxPages: env.DOCUMENT_MAX_PAGES,
      documentMaxParts: env.DOCUMENT_MAX_PARTS,
      ...(env.TRANSCRIPTION_URL && {
        transcription: { url: env.TRANSCRIPTION_URL, model: env.TRANSCRIPTION_MODEL, ...(env.TRANSCRIPTION_API_KEY && { apiKey: env.TRANSCRIPTION_API_KEY }) },
      }),
    },
    adminToken: env.ADMIN_TOKEN,
    api: { host: env.API_HOST, port: env.API_PORT },
    web: webConfig(env),
    webhook: env.WEBHOOK_SECRET
      ? { secret: env.WEBHOOK_SECRET, host: env.API_HOST, port: env.WEBHOOK_PORT, callbackHosts: env.WEBHOOK_CALLBACK_HOSTS }
      : undefined,
    terminal: { mode: env.TERMINAL, user: env.TERMINAL_USER ?? loginName() },
    owner: { telegramUserId: env.OWNER_TELEGRAM_USER_ID, terminalUser: env.OWNER_TERMINAL_USER, webhookSender: env.OWNER_WEBHOOK_SENDER },
    link: { mergePauseMs: env.LINK_MERGE_PAUSE_MS },
    ingest: { maxEpisodeBytes: env.EPISODE_MAX_BYTES },
    timeZone: env.TZ ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC',
    sleep: {
      enabled: env.SLEEP_ENABLED,
      consolidateCron: env.SLEEP_CONSOLIDATE_CRON,
      decayCron: env.SLEEP_DECAY_CRON,
      digestCheckCron: '* * * * *',
      idleMinutes: env.SLEEP_IDLE_MINUTES,
      minEpisodes: env.SLEEP_MIN_EPISODES,
      maxWaitHours: env.SLEEP_MAX_WAIT_HOURS,
      defaultSleepWindow: { startHour: env.SLEEP_WINDOW_START, durationHours: env.SLEEP_WINDOW_HOURS },
      maxAttempts: env.SLEEP_MAX_ATTEMPTS,
      dailyTokenBudget: env.SLEEP_DAILY_TOKEN_BUDGET,
      digestTime: env.DIGEST_TIME,
      soulMaxTokens: env.SOUL_MAX_TOKENS,
    },
    agent: {
      contextTokens: env.AGENT_CONTEXT_TOKENS,
      memoryTokens: env.AGENT_MEMORY_TOKENS,
      summaryTokens: env.AGENT_SUMMARY_TOKENS,
      goalTokens: env.AGENT_GOAL_TOKENS,
      recentTurns: env.AGENT_RECENT_TURNS,
      answerTokens: env.AGENT_ANSWER_TOKENS,
      idleEndMinutes: env.AGENT_IDLE_END_MINUTES,
      endSummary: env.AGENT_END_SUMMARY,
      compactionStrategy: env.AGENT_COMPACTION_STRATEGY,
      compactionCooldownMs: env.AGENT_COMPACTION_COOLDOWN_SECONDS * 1000,
      replyRatePerMinute: env.REPLY_RATE_PER_MINUTE,
      replyDailyBudget: env.REPLY_DAILY_BUDGET,
    },
    reminders: { checkMs: env.REMINDER_CHECK_SECONDS * 1000, lateAfterMs: env.REMINDER_LATE_SECONDS * 1000 },
    log: { level: env.LOG_LEVEL, format: env.LOG_FORMAT, ...(env.LOG_FILE ? { file: path.resolve(cwd, env.LOG_FILE) } : {}) },
    secrets,
  };
}

/**
 * Rules that join several settings. They read the raw strings so that they are reported together
 * with the problems of single settings, all at once.
 */
function crossFieldIssues(env: Record<string, string | undefined>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (env.DB_PROVIDER === 'postgres') {
    if (!env.DATABASE_URL || !/^postgres(ql)?:\/\//.test(env.DATABASE_URL)) {
      issues.push({ setting: 'DATABASE_URL', problem: 'must be a postgresql://user:password@host:5432/database URL when DB_PROVIDER=postgres' });
    }
  } else if (env.DATABASE_URL && !env.DATABASE_URL.startsWith('file:')) {
    issues.push({ setting: 'DATABASE_URL', problem: 'must be a file:PATH URL when DB_PROVIDER=sqlite (or set DB_PROVIDER=postgres)' });
  }
  if (env.DATABASE_ENCRYPTION_KEY && env.DB_PROVIDER === 'postgres' && env.VECTOR_STORE === 'qdrant') {
    issues.push({
      setting: 'DATABASE_ENCRYPTION_KEY',
      problem:
        'encrypts the embedded SQLite files, and with DB_PROVIDER=postgres and VECTOR_STORE=qdrant there are none: use the encryption at rest of the PostgreSQL and Qdrant servers (or their disks), and unset it',
    });
  }
  if (env.VECTOR_STORE === 'qdrant' && !env.QDRANT_URL) {
    issues.push({ setting: 'QDRANT_URL', problem: 'is required when VECTOR_STORE=qdrant, e.g. http://127.0.0.1:6333' });
  }
  if (env.TELEGRAM_MODE === 'webhook') {
    if (!env.TELEGRAM_WEBHOOK_URL)
      issues.push({
        setting: 'TELEGRAM_WEBHOOK_URL',
        problem: 'is required when TELEGRAM_MODE=webhook: the public https URL Telegram posts updates to, e.g. https://bot.example.com/telegram',
      });
    else if (webhookPath(env.TELEGRAM_WEBHOOK_URL)?.startsWith('/webhook/'))
      issues.push({ setting: 'TELEGRAM_WEBHOOK_URL', problem: 'its path must not be under /webhook/ (the webhook channel serves those); use e.g. /telegram' });
    if (!env.TELEGRAM_WEBHOOK_SECRET)
      issues.push({
        setting: 'TELEGRAM_WEBHOOK_SECRET',
        problem:
          'is required when TELEGRAM_MODE=webhook: 16-256 characters of A-Z a-z 0-9 _ - (generate one with `openssl rand -hex 32`); Telegram sends it with every update and other requests are refused',
      });
    if (!env.TELEGRAM_BOT_TOKEN) issues.push({ setting: 'TELEGRAM_BOT_TOKEN', problem: 'is required when TELEGRAM_MODE=webhook' });
  }
  if (env.LLM_PROVIDER === 'anthropic' && !env.ANTHROPIC_API_KEY) {
    issues.push({ setting: 'ANTHROPIC_API_KEY', problem: 'is required when LLM_PROVIDER=anthropic' });
  }
  return issues;
}

/** The path of a URL (`/` when it has none), or undefined when it is not a URL. */
function webhookPath(url: string): string | undefined {
  try {
    return new URL(url).pathname || '/';
  } catch {
    return undefined;
  }
}

function telegramMode(env: Env): TelegramMode {
  if (env.TELEGRAM_MODE === 'polling' || !env.TELEGRAM_WEBHOOK_URL || !env.TELEGRAM_WEBHOOK_SECRET) return { kind: 'polling' };
  return {
    kind: 'webhook',
    url: env.TELEGRAM_WEBHOOK_URL,
    path: webhookPath(env.TELEGRAM_WEBHOOK_URL) ?? '/',
    secret: env.TELEGRAM_WEBHOOK_SECRET,
    host: env.API_HOST,
    port: env.WEBHOOK_PORT,
  };
}

/** The login name as a scope-key-safe word (`terminal:<name>`); `me` when there is none. */
function loginName(): string {
  let name = '';
  try {
    name = os.userInfo().username;
  } catch {
    // No passwd entry (some containers): fall through.
  }
  const safe = name.replace(/[^\p{L}\p{N}_.@-]+/gu, '').slice(0, 64);
  return safe === '' ? 'me' : safe;
}

function passwordOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const password = new URL(url).password;
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}

/** The memory page's settings; PUBLIC_URL's trailing slashes go (links append `/app/...`). */
function webConfig(env: Env): WebConfig {
  const publicUrl = (env.PUBLIC_URL ?? `http://127.0.0.1:${env.API_PORT}`).replace(/\/+$/, '');
  return {
    publicUrl,
    https: publicUrl.startsWith('https://'),
    initDataMaxAgeSeconds: env.WEB_INIT_DATA_MAX_AGE_SECONDS,
    ...(env.TELEGRAM_WEBAPP_SHORT_NAME && { webAppShortName: env.TELEGRAM_WEBAPP_SHORT_NAME }),
  };
}
