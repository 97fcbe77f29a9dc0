/**
 * Rules of the configuration that join several settings (a PostgreSQL URL for postgres, a Qdrant
 * URL for qdrant, the Telegram webhook's URL and secret...), beside the schema's rules of single
 * settings (schema.ts).
 */
import type { ConfigIssue } from './config-error';

/**
 * Rules that join several settings. They read the raw strings so that they are reported together
 * with the problems of single settings, all at once.
 */
export function crossFieldIssues(env: Record<string, string | undefined>): ConfigIssue[] {
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
export function webhookPath(url: string): string | undefined {
  try {
    return new URL(url).pathname || '/';
  } catch {
    return undefined;
  }
}
