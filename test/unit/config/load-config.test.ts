import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../../../src/config/load-config';
import { envSchema, settingDocs } from '../../../src/config/schema';
import { tempDir } from '../../support/databases';

function load(env: Record<string, string>, cwd = tempDir()) {
  return loadConfig({ env, envFile: false, cwd });
}

function problems(env: Record<string, string>): string[] {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).issues.map((issue) => `${issue.setting}: ${issue.problem}`);
  }
  throw new Error('expected the configuration to be refused');
}

describe('loadConfig', () => {
  it('works with no settings at all: SQLite under ./data, local embedder, no channels', () => {
    const cwd = tempDir();
    const config = load({}, cwd);
    expect(config.dataDir).toBe(path.join(cwd, 'data'));
    expect(config.database).toEqual({ provider: 'sqlite', url: `file:${path.join(cwd, 'data', 'nocturne.db')}`, file: path.join(cwd, 'data', 'nocturne.db') });
    expect(config.vectors).toEqual({ store: 'sqlite-vec', file: path.join(cwd, 'data', 'vectors.db'), scanMemoryBytes: 256 * 1024 * 1024 });
    expect(config.embedder.kind).toBe('local');
    expect(config.llm.provider).toBe('ollama');
    expect(config.telegram).toBeUndefined();
    expect(config.ingest.maxEpisodeBytes).toBe(4 * 1024 * 1024);
  });

  it('bounds the int8 copies of large scopes by VECTOR_SCAN_MEMORY_MB, and refuses what is not a size', () => {
    expect(load({ VECTOR_SCAN_MEMORY_MB: '64' }).vectors).toMatchObject({ store: 'sqlite-vec', scanMemoryBytes: 64 * 1024 * 1024 });
    expect(load({ VECTOR_SCAN_MEMORY_MB: '0' }).vectors).toMatchObject({ scanMemoryBytes: 0 });
    for (const bad of ['-1', 'lots', '1.5', '70000']) {
      expect(problems({ VECTOR_SCAN_MEMORY_MB: bad })).toEqual([expect.stringMatching(/^VECTOR_SCAN_MEMORY_MB: /)]);
    }
  });

  it('reports every problem at once, naming the setting and what is allowed', () => {
    const found = problems({ DB_PROVIDER: 'mysql', LOG_LEVEL: 'loud', EPISODE_MAX_BYTES: '-5', TZ: 'Mars/Olympus', TELEGRAM_ALLOWED_USERS: 'alice,bob' });
    expect(found).toHaveLength(5);
    expect(found.find((p) => p.startsWith('DB_PROVIDER'))).toMatch(/sqlite.*postgres/);
    expect(found.find((p) => p.startsWith('LOG_LEVEL'))).toMatch(/error.*warn.*info.*debug/);
    expect(found.find((p) => p.startsWith('EPISODE_MAX_BYTES'))).toMatch(/>=\s*1|at least|too small/i);
    expect(found.find((p) => p.startsWith('TZ'))).toMatch(/IANA/);
    expect(found.find((p) => p.startsWith('TELEGRAM_ALLOWED_USERS'))).toMatch(/numeric Telegram user ids/);
  });

  it('requires a PostgreSQL URL for postgres and a Qdrant URL for qdrant', () => {
    const found = problems({ DB_PROVIDER: 'postgres', VECTOR_STORE: 'qdrant', LLM_PROVIDER: 'anthropic' });
    expect(found.map((p) => p.split(':')[0]).sort()).toEqual(['ANTHROPIC_API_KEY', 'DATABASE_URL', 'QDRANT_URL']);
  });

  it('refuses a non-file URL for SQLite', () => {
    expect(problems({ DATABASE_URL: 'postgresql://x@localhost/db' })[0]).toMatch(/^DATABASE_URL: must be a file:PATH URL/);
  });

  it('never echoes a secret value in a problem', () => {
    const token = '123456789:this-is-not-a-valid token';
    const found = problems({ TELEGRAM_BOT_TOKEN: token, ADMIN_TOKEN: 'short' });
    expect(found.join('\n')).not.toContain('this-is-not');
    expect(found.join('\n')).not.toContain('short"');
  });

  it('reads .env, lets the environment win, and treats empty values as unset', () => {
    const cwd = tempDir();
    fs.writeFileSync(path.join(cwd, '.env'), 'LOG_LEVEL=debug\nDATA_DIR=from-file\nTZ=\n');
    const config = loadConfig({ env: { DATA_DIR: 'from-env' }, cwd });
    expect(config.log.level).toBe('debug');
    expect(config.dataDir).toBe(path.join(cwd, 'from-env'));
  });

  it('parses the Telegram allowlist and collects every secret for redaction', () => {
    const config = load({
      TELEGRAM_BOT_TOKEN: '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
      TELEGRAM_ALLOWED_USERS: '12, 34,56',
      ANTHROPIC_API_KEY: 'sk-ant-abcdefghijklmnop',
      ADMIN_TOKEN: 'a-very-long-admin-token',
      DB_PROVIDER: 'postgres',
      DATABASE_URL: 'postgresql://nocturne:p%40ss-word@db:5432/nocturne',
    });
    expect(config.telegram?.allowedUsers).toEqual([12, 34, 56]);
    expect(config.llm.provider).toBe('anthropic');
    expect(config.llm.model).toBe('claude-sonnet-4-6');
    expect([...config.secrets].sort()).toEqual(
      ['123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw', 'a-very-long-admin-token', 'p@ss-word', 'sk-ant-abcdefghijklmnop'].sort(),
    );
  });

  it('reads Telegram webhook mode, requires its URL and secret, and registers the secret for redaction', () => {
    const token = '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
    const secret = 'wh_secret-0123456789abcdef';
    expect(load({ TELEGRAM_BOT_TOKEN: token }).telegram?.mode).toEqual({ kind: 'polling' });
    const config = load({
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_MODE: 'webhook',
      TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/tg/in',
      TELEGRAM_WEBHOOK_SECRET: secret,
      API_HOST: '0.0.0.0',
      WEBHOOK_PORT: '9000',
    });
    expect(config.telegram?.mode).toEqual({ kind: 'webhook', url: 'https://bot.example.com/tg/in', path: '/tg/in', secret, host: '0.0.0.0', port: 9000 });
    expect(config.secrets).toContain(secret);
    const missing = problems({ TELEGRAM_BOT_TOKEN: token, TELEGRAM_MODE: 'webhook' });
    expect(missing).toEqual([
      expect.stringMatching(/^TELEGRAM_WEBHOOK_URL: is required when TELEGRAM_MODE=webhook/),
      expect.stringMatching(/^TELEGRAM_WEBHOOK_SECRET: is required when TELEGRAM_MODE=webhook/),
    ]);
    const bad = problems({
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_MODE: 'webhook',
      TELEGRAM_WEBHOOK_URL: 'https://x.example/webhook/tg',
      TELEGRAM_WEBHOOK_SECRET: 'short secret!',
    });
    expect(bad).toEqual([
      expect.stringMatching(/^TELEGRAM_WEBHOOK_SECRET: must be 16 to 256 characters/),
      expect.stringMatching(/^TELEGRAM_WEBHOOK_URL: its path must not be under \/webhook\//),
    ]);
    expect(bad.join('\n')).not.toContain('short secret!');
  });

  it('hands the encryption key to both SQLite files, registers it as a secret, and refuses it where there is no SQLite file', () => {
    const key = 'a passphrase of some length';
    const config = load({ DATABASE_ENCRYPTION_KEY: key });
    expect(config.database).toMatchObject({ provider: 'sqlite', encryptionKey: key });
    expect(config.vectors).toMatchObject({ store: 'sqlite-vec', encryptionKey: key });
    expect(config.secrets).toContain(key);
    expect(problems({ DATABASE_ENCRYPTION_KEY: 'short' })).toEqual(['DATABASE_ENCRYPTION_KEY: must be at least 16 characters (a long passphrase)']);
    const servers = problems({
      DATABASE_ENCRYPTION_KEY: key,
      DB_PROVIDER: 'postgres',
      DATABASE_URL: 'postgresql://n@db/n',
      VECTOR_STORE: 'qdrant',
      QDRANT_URL: 'http://q:6333',
    });
    expect(servers).toEqual([expect.stringMatching(/^DATABASE_ENCRYPTION_KEY: encrypts the embedded SQLite files/)]);
    expect(servers.join('\n')).not.toContain(key);
  });

  it('documents every setting', () => {
    expect(Object.keys(settingDocs).sort()).toEqual(Object.keys(envSchema.shape).sort());
  });

  it('.env.example lists every setting', () => {
    const example = fs.readFileSync(path.join(__dirname, '..', '..', '..', '.env.example'), 'utf8');
    for (const key of Object.keys(envSchema.shape)) expect(example).toMatch(new RegExp(`^#? ?${key}=`, 'm'));
  });
});
