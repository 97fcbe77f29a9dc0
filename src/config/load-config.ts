/**
 * Reads the configuration once, from the environment and an optional `.env` file, into a typed
 * object. This is the only place in Nocturne that reads `process.env`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError, type ConfigIssue } from './config-error';
import type { Config, TelegramMode, WebConfig } from './config-types';
import { crossFieldIssues, webhookPath } from './cross-field-rules';
import { envSchema, type Env } from './schema';

export type {
  AgentConfig,
  CompactionStrategyName,
  Config,
  MediaConfig,
  OwnerConfig,
  SleepConfig,
  TelegramConfig,
  TelegramMode,
  WebConfig,
} from './config-types';
export { ConfigError, type ConfigIssue } from './config-error';

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
