/**
 * Issue 16, item 8: what the log file may hold. `npm start` runs as a child process with the
 * Telegram channel on the loopback Bot API and LOG_FILE under DATA_DIR.
 *
 * - Upstream error text carrying the bot token URL-encoded and an API key in base64 is logged
 *   with both replaced by [REDACTED].
 * - With DATABASE_ENCRYPTION_KEY set, the log names no Telegram user or chat id and no scope key
 *   in plain text: they are keyed pseudonyms (`id#...`), the same for the same id in every line.
 *   Without encryption the ids are logged as before (the control).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { startFakeTelegram } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { cleanEnv } from '../support/run-process';
import { startEntry } from './crash-support';

const ANTHROPIC_KEY = 'sk-ant-api03-logprivacy-0123456789abcdefghij';
const STRANGER = { id: 735_201_947, first_name: 'Stranger' };

async function runOnce(encrypted: boolean): Promise<string> {
  const fake = await startFakeTelegram();
  const dataDir = path.join(tempDir('nocturne-log-privacy-'), 'data');
  const logFile = path.join(dataDir, 'nocturne.log');
  const upstream =
    `Bad Request: the proxy at https://relay.example/bot${encodeURIComponent(fake.token)}/sendMessage refused; ` +
    `x-auth=${Buffer.from(`x-api-key: ${ANTHROPIC_KEY}`).toString('base64')}`;
  fake.fail('sendMessage', { kind: 'error', code: 400, description: upstream });
  const service = startEntry(
    'src/main.ts',
    [],
    cleanEnv({
      DATA_DIR: dataDir,
      LOG_FILE: logFile,
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_ALLOWED_USERS: '111111111',
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ...(encrypted ? { DATABASE_ENCRYPTION_KEY: 'log-privacy-passphrase-0042' } : {}),
    }),
  );
  try {
    await fake.waitFor(() => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('Nocturne is ready'), 30_000, 'the service to be ready');
    fake.message(STRANGER, 'hello there');
    fake.message(STRANGER, 'hello again');
    await fake.waitFor(() => fs.readFileSync(logFile, 'utf8').includes('could not send a refusal'), 20_000, 'the refusal failure in the log');
  } finally {
    service.child.kill('SIGTERM');
    await service.ended;
    await fake.close();
  }
  return fs.readFileSync(logFile, 'utf8');
}

describe('the log file (issue 16, item 8)', () => {
  it('redacts encoded secrets from upstream errors and, under encryption, names people only by pseudonyms', async () => {
    const encrypted = await runOnce(true);
    const plain = await runOnce(false);
    const lines = encrypted.split('\n').filter(Boolean);
    // eslint-disable-next-line no-console
    console.log(`log-privacy: ${lines.length} lines in the encrypted service's log; the refusal lines:\n${lines.filter((l) => /refus/.test(l)).join('\n')}`);

    for (const log of [encrypted, plain]) {
      expect(log).toContain('could not send a refusal');
      expect(log).not.toMatch(/\d{6,12}%3A[A-Za-z0-9_-]{30,}/i);
      expect(log).not.toContain(Buffer.from(`x-api-key: ${ANTHROPIC_KEY}`).toString('base64').slice(4, 40));
      expect(log).not.toContain(ANTHROPIC_KEY);
      expect(log).toContain('[REDACTED]');
    }
    // Under encryption: no user id, no scope key with it; one pseudonym for the stranger in every line.
    expect(encrypted).not.toContain(String(STRANGER.id));
    const refusals = lines.filter((l) => /refus/.test(l)).map((l) => JSON.parse(l) as { userId?: string; chatId?: string });
    const names = new Set(refusals.map((r) => r.userId).filter(Boolean));
    expect(names.size).toBe(1);
    expect([...names][0]).toMatch(/^id#[0-9a-f]{12}$/);
    // The control: without encryption the id is logged as it is.
    expect(plain).toContain(String(STRANGER.id));
  }, 180_000);
});
