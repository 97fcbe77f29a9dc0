/**
 * Every setting Nocturne reads, as one zod schema over environment variables.
 *
 * Names are the conventional ones (deployment files and other tools rely on them). Each setting
 * has a default that works on a fresh machine (the embedded stack: SQLite under ./data, the local
 * embedder, the terminal channel), so `npm start` needs no configuration at all.
 */
import { CronPattern } from 'croner';
import { z } from 'zod';

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const url = z.url({ protocol: /^https?$/ });

const optionalString = z.string().trim().min(1).optional();

const timeZone = z.string().refine(
  (value) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: value });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be an IANA time zone such as Europe/Madrid or UTC' },
);

/** A cron expression croner accepts (5 fields, or 6 with seconds first); parsed, never scheduled. */
const cron = z
  .string()
  .trim()
  .superRefine((value, ctx) => {
    try {
      new CronPattern(value);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a cron expression such as "0 */6 * * *" (minute hour day month weekday): ${(error as Error).message}`,
      });
    }
  });

const clockTime = z
  .string()
  .trim()
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as HH:MM, 24-hour, e.g. 21:00');

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], { message: 'must be true or false' })
  .transform((value) => ['true', '1', 'yes', 'on'].includes(value));

const userIdList = z
  .string()
  .trim()
  .regex(/^(\s*-?\d+\s*)(,\s*-?\d+\s*)*$|^$/, 'must be a comma-separated list of numeric Telegram user ids')
  .transform((value) => (value === '' ? [] : value.split(',').map((id) => Number(id.trim()))));

/** The raw environment, validated. Keys are the environment variable names. */
export const envSchema = z.object({
  // Storage
  DATA_DIR: z.string().trim().min(1).default('./data'),
  DB_PROVIDER: z.enum(['sqlite', 'postgres']).default('sqlite'),
  DATABASE_URL: optionalString,
  DATABASE_ENCRYPTION_KEY: z.string().min(16, 'must be at least 16 characters (a long passphrase)').optional(),
  VECTOR_STORE: z.enum(['sqlite-vec', 'qdrant']).default('sqlite-vec'),
  QDRANT_URL: url.optional(),
  QDRANT_API_KEY: optionalString,
  VECTOR_SCAN_MEMORY_MB: int(0, 65_536).default(256),

  // Embeddings and the language model
  EMBEDDER: z.enum(['local', 'ollama']).default('local'),
  EMBEDDING_MODEL: z.string().trim().min(1).default('nomic-embed-text'),
  EMBEDDING_DIMENSION: int(8, 8192).optional(),
  OLLAMA_HOST: url.default('http://127.0.0.1:11434'),
  LLM_PROVIDER: z.enum(['anthropic', 'ollama']).optional(),
  LLM_MODEL: optionalString,
  LLM_TIMEOUT_MS: int(1_000, 600_000).default(30_000),
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: url.optional(),

  // Channels and the admin API
  TELEGRAM_BOT_TOKEN: z
    .string()
    .trim()
    .regex(/^\d+:[A-Za-z0-9_-]+$/, 'must look like 123456789:AAH... (the token @BotFather gave you)')
    .optional(),
  TELEGRAM_API_ROOT: url.default('https://api.telegram.org'),
  TELEGRAM_ALLOWED_USERS: userIdList.default([]),
  TELEGRAM_GROUPS: bool.default(false),
  TELEGRAM_HEARTBEAT_MAX_AGE: int(5, 86_400).default(120),
  TELEGRAM_MODE: z.enum(['polling', 'webhook']).default('polling'),
  TELEGRAM_WEBHOOK_URL: z.url({ protocol: /^https?$/ }).optional(),
  TELEGRAM_WEBHOOK_SECRET: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,256}$/, 'must be 16 to 256 characters of A-Z, a-z, 0-9, _ and - (what Telegram accepts as secret_token)')
    .optional(),
  // What Telegram media become (src/channels/telegram/media/)
  MEDIA_MAX_FILE_MB: int(1, 20).default(10),
  MEDIA_VISION: z.enum(['auto', 'off']).default('auto'),
  MEDIA_DESCRIPTION_MAX_CHARS: int(100, 4_000).default(1_000),
  DOCUMENT_MAX_PAGES: int(1, 1_000).default(50),
  DOCUMENT_MAX_PARTS: int(1, 1_000).default(100),
  TRANSCRIPTION_URL: url.optional(),
  TRANSCRIPTION_MODEL: z.string().trim().min(1).default('whisper-1'),
  TRANSCRIPTION_API_KEY: optionalString,
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  API_HOST: z.string().trim().min(1).default('127.0.0.1'),
  API_PORT: int(1, 65_535).default(8787),
  // The memory page (docs/channels.md, "The memory page")
  PUBLIC_URL: url.optional(),
  WEB_INIT_DATA_MAX_AGE_SECONDS: int(60, 30 * 86_400).default(86_400),
  TELEGRAM_WEBAPP_SHORT_NAME: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_]{3,30}$/, 'must be the short name given to /newapp in @BotFather (3-30 of A-Z, a-z, 0-9, _)')
    .optional(),
  WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  WEBHOOK_PORT: int(1, 65_535).default(8788),
  WEBHOOK_CALLBACK_HOSTS: z
    .string()
    .trim()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((host) => host.trim().toLowerCase())
        .filter((host) => host !== ''),
    )
    .refine(
      (hosts) => hosts.every((host) => /^(\*\.)?[a-z0-9._:[\]-]+$/.test(host)),
      'must be a comma-separated list of host names or IP addresses, e.g. hooks.example.com,*.example.org,10.0.0.7',
    ),
  TERMINAL: z.enum(['auto', 'on', 'off']).default('auto'),
  TERMINAL_USER: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .regex(/^[\p{L}\p{N}_.@-]+$/u, 'letters, digits, _ . @ - only')
    .optional(),

  // One person across channels (docs/channels.md, "One person on every channel")
  OWNER_TELEGRAM_USER_ID: z
    .string()
    .trim()
    .regex(/^\d{1,20}$/, 'must be a numeric Telegram user id, e.g. 123456789')
    .optional(),
  OWNER_TERMINAL_USER: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .regex(/^[\p{L}\p{N}_.@-]+$/u, 'letters, digits, _ . @ - only')
    .optional(),
  OWNER_WEBHOOK_SENDER: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}(:[^\s:][^\s]{0,199})?$/, 'must be <source> or <source>:<user>, as in POST /webhook/<source> with "user"')
    .optional(),
  LINK_MERGE_PAUSE_MS: int(0, 600_000).default(0),

  // Ingest
  EPISODE_MAX_BYTES: int(1, 64 * 1024 * 1024).default(4 * 1024 * 1024),

  // Sleep (background consolidation, decay and digests)
  SLEEP_ENABLED: bool.default(true),
  SLEEP_CONSOLIDATE_CRON: cron.default('0 * * * *'),
  SLEEP_DECAY_CRON: cron.default('30 3 * * *'),
  SLEEP_IDLE_MINUTES: int(0, 7 * 24 * 60).default(30),
  SLEEP_MIN_EPISODES: int(1, 1_000_000).default(10),
  SLEEP_MAX_WAIT_HOURS: int(1, 24 * 365).default(24),
  SLEEP_WINDOW_START: int(0, 23).default(2),
  SLEEP_WINDOW_HOURS: int(1, 24).default(4),
  SLEEP_MAX_ATTEMPTS: int(1, 1_000).default(5),
  SLEEP_DAILY_TOKEN_BUDGET: int(0, 1_000_000_000).default(200_000),
  DIGEST_TIME: clockTime.default('21:00'),
  REMINDER_CHECK_SECONDS: int(1, 3_600).default(30),
  REMINDER_LATE_SECONDS: int(0, 7 * 24 * 3_600).default(300),
  SOUL_MAX_TOKENS: int(100, 1_000_000).default(1_500),

  // Agent (replies, working memory, compaction)
  AGENT_CONTEXT_TOKENS: int(512, 10_000_000).optional(),
  AGENT_MEMORY_TOKENS: int(0, 1_000_000).default(2_000),
  AGENT_SUMMARY_TOKENS: int(0, 1_000_000).default(1_000),
  AGENT_GOAL_TOKENS: int(0, 1_000_000).default(300),
  AGENT_RECENT_TURNS: int(1, 10_000).default(20),
  AGENT_ANSWER_TOKENS: int(16, 1_000_000).default(1_024),
  AGENT_IDLE_END_MINUTES: int(0, 7 * 24 * 60).default(60),
  AGENT_END_SUMMARY: bool.default(false),
  AGENT_COMPACTION_STRATEGY: z.enum(['hybrid', 'progressive-summary', 'sliding-window', 'importance-based']).default('hybrid'),
  AGENT_COMPACTION_COOLDOWN_SECONDS: int(0, 86_400).default(300),
  REPLY_RATE_PER_MINUTE: int(0, 10_000).default(20),
  REPLY_DAILY_BUDGET: int(0, 1_000_000).default(500),

  // Runtime
  TZ: timeZone.optional(),
  LOG_LEVEL: z.enum(['error', 'warn', 'info', 'debug']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
  LOG_FILE: z.string().trim().min(1).optional(),
});

export type Env = z.infer<typeof envSchema>;

/** Documentation of every setting: what it does and what is allowed. Drives `.env.example`. */
export const settingDocs: Record<keyof Env, string> = {
  DATA_DIR: 'Folder for the embedded database, vector index and exports.',
  DB_PROVIDER: 'sqlite (embedded, default) or postgres.',
  DATABASE_ENCRYPTION_KEY:
    'Passphrase that encrypts the embedded SQLite files (the database and vectors.db; SQLCipher 4 scheme) at rest; at least 16 characters; never logged. Without it nothing stored can be read: keep a copy. An existing plain store is encrypted once with `npm run cli -- encrypt`.',
  DATABASE_URL: 'file:PATH for SQLite (default file:DATA_DIR/nocturne.db); postgresql://user:pass@host:5432/db for PostgreSQL.',
  VECTOR_STORE: 'sqlite-vec (embedded, default) or qdrant.',
  QDRANT_URL: 'Qdrant REST URL, required when VECTOR_STORE=qdrant, e.g. http://qdrant:6333.',
  VECTOR_SCAN_MEMORY_MB:
    'Memory for the in-memory int8 copies of large scopes (sqlite-vec), all scopes together, in MiB (default 256, about 500,000 vectors; 0 searches every scope from the file).',
  QDRANT_API_KEY: 'Qdrant API key, if the server requires one.',
  EMBEDDER: 'local (in-process, default) or ollama.',
  EMBEDDING_MODEL: 'Ollama embedding model when EMBEDDER=ollama.',
  EMBEDDING_DIMENSION:
    'Vector size of EMBEDDING_MODEL when it is not a known model (known: nomic-embed-text 768, mxbai-embed-large 1024, all-minilm 384, ...); checked on the first call.',
  OLLAMA_HOST: 'Ollama server for embeddings and/or chat.',
  LLM_PROVIDER: 'anthropic or ollama; default anthropic when ANTHROPIC_API_KEY is set, else ollama.',
  LLM_MODEL: 'Model name; default claude-sonnet-4-6 (anthropic) or llama3.2 (ollama).',
  LLM_TIMEOUT_MS: 'Timeout of one model call, in milliseconds.',
  ANTHROPIC_API_KEY: 'Anthropic API key (never logged).',
  ANTHROPIC_BASE_URL: 'Override of the Anthropic API address (proxies, tests).',
  TELEGRAM_BOT_TOKEN: 'Bot token from @BotFather; when set, the Telegram channel runs (never logged).',
  TELEGRAM_API_ROOT: 'Bot API address (a local Bot API server, tests).',
  TELEGRAM_ALLOWED_USERS: 'Comma-separated Telegram user ids allowed to talk to the bot.',
  TELEGRAM_GROUPS: 'Also serve group chats (true or false); each group gets its own memory, shared by its allowed members and never shown in private chats.',
  TELEGRAM_HEARTBEAT_MAX_AGE:
    'Seconds without a completed getUpdates long poll after which the bot counts as not polling: the container health check fails and /readyz says stale. Keep it well above the 30 s long poll.',
  TELEGRAM_MODE:
    'How Telegram updates arrive: polling (one process pulls them; default) or webhook (Telegram posts them to TELEGRAM_WEBHOOK_URL; several replicas can share one PostgreSQL).',
  TELEGRAM_WEBHOOK_URL:
    'Public https URL Telegram posts updates to when TELEGRAM_MODE=webhook (your load balancer); its path is served on WEBHOOK_PORT, e.g. https://bot.example.com/telegram.',
  TELEGRAM_WEBHOOK_SECRET:
    'Secret Telegram sends with every webhook update (setWebhook secret_token; 16-256 of A-Z a-z 0-9 _ -); a request without it is refused. Required when TELEGRAM_MODE=webhook; never logged.',
  MEDIA_MAX_FILE_MB:
    'Largest photo, document or voice message the Telegram bot downloads to read, in MB (1-20, default 10; the Bot API serves at most 20). A larger one is refused with a reply saying so; only that it was sent is kept.',
  MEDIA_VISION:
    'auto (default): photos are described by the configured model, which must accept images (Anthropic; an Ollama model such as llava); off: the model is not shown photos and only their captions are kept (the person is told once).',
  MEDIA_DESCRIPTION_MAX_CHARS: 'Longest description of a photo that is stored, in characters (100-4000, default 1000); a longer one is cut.',
  DOCUMENT_MAX_PAGES: 'Most pages of a PDF read into memory (1-1000, default 50); a longer PDF is refused with a reply saying so.',
  DOCUMENT_MAX_PARTS:
    'Most parts (about 1,500 characters each) a document is stored as (1-1000, default 100); a longer text is refused with a reply saying so.',
  TRANSCRIPTION_URL:
    'OpenAI-compatible transcription server (POST <url>/v1/audio/transcriptions, e.g. a local Whisper server); when set, voice and video messages are transcribed. Unset: they are stored as "voice message, 0:12".',
  TRANSCRIPTION_MODEL: 'Model name sent to the transcription server (default whisper-1).',
  TRANSCRIPTION_API_KEY: 'Bearer key of the transcription server, if it needs one (never logged).',
  ADMIN_TOKEN: 'Bearer token of the admin HTTP API (at least 16 characters; never logged); when set, npm start serves the API.',
  API_HOST: 'Address the admin API and the webhook channel listen on (loopback by default).',
  API_PORT: 'Port of the admin API.',
  PUBLIC_URL:
    'The address people reach this service at (the admin API listener), used in /web links and by the memory page as a Telegram Mini App, which needs https (e.g. https://nocturne.example.com); default http://127.0.0.1:API_PORT. When https, the bot sets its chat menu button to the page.',
  WEB_INIT_DATA_MAX_AGE_SECONDS:
    'Oldest Telegram Mini App data (auth_date) the memory page accepts, in seconds (60 to 30 days, default 86400); older is refused and the page asks to be opened again.',
  TELEGRAM_WEBAPP_SHORT_NAME:
    'Short name of the Mini App registered with @BotFather /newapp: /memory in a group answers a t.me direct link to it (Telegram allows web_app buttons only in private chats). Unset: /memory in a group explains how to set it.',
  WEBHOOK_SECRET:
    'Shared secret of the webhook channel (HMAC-SHA256 of the body; at least 16 characters; never logged); when set, npm start serves POST /webhook/<source>.',
  WEBHOOK_PORT: 'Port of the webhook channel, and of the Telegram webhook route when TELEGRAM_MODE=webhook.',
  WEBHOOK_CALLBACK_HOSTS:
    'Hosts a webhook callbackUrl may name (comma-separated names or IP addresses; *.example.com for names under a domain, which must resolve to public addresses only). Empty (default): requests with a callbackUrl are refused (400).',
  TERMINAL: 'The terminal conversation of npm start: auto (when no TELEGRAM_BOT_TOKEN is set and stdin is a terminal), on or off.',
  TERMINAL_USER: 'Who talks in the terminal; the scope is terminal:<name> (default: the login name).',
  OWNER_TELEGRAM_USER_ID:
    "The owner's Telegram user id: their private chat is the owner's one memory, shared with OWNER_TERMINAL_USER and OWNER_WEBHOOK_SENDER from the first message on.",
  OWNER_TERMINAL_USER: "The owner's terminal user (as TERMINAL_USER or cli chat --user names it): talks into the owner's one memory.",
  OWNER_WEBHOOK_SENDER: "The owner on the webhook channel, as <source>:<user> (or <source> for a source without users): talks into the owner's one memory.",
  LINK_MERGE_PAUSE_MS:
    'Test hook: milliseconds a merge of two linked scopes waits inside its transaction after moving its first table, so a test can kill it there (0, default: no wait).',
  EPISODE_MAX_BYTES: 'Largest message accepted, in UTF-8 bytes; larger ones are refused with a clear error.',
  SLEEP_ENABLED: 'Run the sleep scheduler (consolidation, decay, digests) inside npm start: true or false.',
  SLEEP_CONSOLIDATE_CRON: "When to look for scopes due for consolidation (cron, in TZ); hourly, so every scope's local sleep window is met.",
  SLEEP_DECAY_CRON: 'When memory decay runs for every scope (cron, in TZ).',
  SLEEP_IDLE_MINUTES: 'Minutes without a message before a scope counts as asleep and may be consolidated.',
  SLEEP_MIN_EPISODES: 'Unconsolidated episodes that make a consolidation run due in the next sleep window (one model call reads them together).',
  SLEEP_MAX_WAIT_HOURS:
    'Hours the oldest unconsolidated message of the person may wait: a run is due in the last sleep window before it would wait longer, with fewer than SLEEP_MIN_EPISODES.',
  SLEEP_WINDOW_START: 'Local hour (0-23, in the scope time zone) at which the nightly sleep window of scopes without their own opens.',
  SLEEP_WINDOW_HOURS: 'Length of that window in hours (1-24; 24 = consolidation at any time of day).',
  SLEEP_MAX_ATTEMPTS: 'Failed consolidation attempts after which an episode is left alone (and reported).',
  SLEEP_DAILY_TOKEN_BUDGET: 'Model tokens (input + output) one scope may spend per local day on sleep work; 0 = unlimited.',
  DIGEST_TIME: 'Local time of day (HH:MM, in the scope time zone) when the daily digest is due.',
  REMINDER_CHECK_SECONDS: 'How often due reminders are looked for and sent, in seconds (a reminder goes out at most this long after its time).',
  REMINDER_LATE_SECONDS: 'A reminder sent more than this many seconds after its time (the service was down) says "(late)" and when it was due.',
  SOUL_MAX_TOKENS: 'Size of the soul (the profile in every reply prompt) in estimated tokens; the best-ranked memories are kept.',
  AGENT_CONTEXT_TOKENS: "Tokens of the model's window the agent budgets a reply in (prompt + answer); default: the model's context window.",
  AGENT_MEMORY_TOKENS: 'Most tokens of relevant memories (and recent episodes of other conversations) put into a reply prompt.',
  AGENT_SUMMARY_TOKENS: 'Most tokens of the running summary of older turns.',
  AGENT_GOAL_TOKENS: 'Most tokens of active goals (goal memories) put into a reply prompt.',
  AGENT_RECENT_TURNS: 'Turns kept in full when older ones are compacted into the summary.',
  AGENT_ANSWER_TOKENS: 'Tokens reserved for the answer (the max_tokens of a reply call).',
  AGENT_IDLE_END_MINUTES: 'Minutes without a message after which a conversation is ended; 0 = never.',
  AGENT_END_SUMMARY:
    'Write a one-sentence summary of every ended conversation with a model call (true), or leave its turns to sleep consolidation (false, default). Capped scopes always remember ended conversations.',
  AGENT_COMPACTION_STRATEGY: 'How older turns are compacted: hybrid (default), progressive-summary, sliding-window or importance-based.',
  AGENT_COMPACTION_COOLDOWN_SECONDS: 'Least time between two compactions of one conversation, in seconds.',
  REPLY_RATE_PER_MINUTE:
    'Most replies the agent writes to one person (scope) in any 60 seconds; further messages are stored, not answered, and the person is told once when they can continue. 0 = unlimited.',
  REPLY_DAILY_BUDGET:
    'Most replies the agent writes to one person (scope) per local day (counted from stored turns, so a restart does not reset it); then messages are stored and answered from the next local midnight. 0 = unlimited.',
  TZ: 'Default IANA time zone for schedules and digests (default: the system zone).',
  LOG_LEVEL: 'error, warn, info or debug.',
  LOG_FORMAT: 'auto (pretty on a terminal, JSON otherwise), pretty or json.',
  LOG_FILE:
    'Write logs to this file instead of stderr (default while the terminal conversation runs: DATA_DIR/nocturne.log); when it cannot be written, lines go to stderr and it is tried again every 5 s.',
};
