/**
 * Issue 17, Compose: the health check must tell whether the bot is polling, not only whether the
 * database answers. `npm start`'s entry point runs as a process against the loopback Bot API; the
 * bot's heartbeat file (DATA_DIR/telegram-heartbeat) appears at start, is refreshed while
 * getUpdates long polls complete, and stops moving once the Bot API stops answering; the image's
 * health check (taken from the Dockerfile) and /readyz turn from healthy to stale with it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { runHealthcheck } from '../support/healthcheck';
import { cleanEnv, startTs } from '../support/run-process';
import { freePort } from '../support/free-port';

const ANA: FakeUser = { id: 1001, first_name: 'Ana' };
/** Not allowed: the bot answers with its refusal, no model involved. */
const STRANGER: FakeUser = { id: 6666, first_name: 'Mallory' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The heartbeat's time, or undefined while there is no file. */
function heartbeatAt(dataDir: string): number | undefined {
  try {
    return Date.parse((JSON.parse(fs.readFileSync(path.join(dataDir, 'telegram-heartbeat'), 'utf8')) as { at: string }).at);
  } catch {
    return undefined;
  }
}

describe('the Telegram polling heartbeat, through npm start (issue 17)', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('is written at start, refreshed while polls complete, and goes stale when the Bot API stops answering getUpdates', async () => {
    const fake: FakeTelegramServer = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const dataDir = path.join(tempDir('nocturne-heartbeat-'), 'data');
    const port = await freePort();
    const adminToken = 'admin-token-for-heartbeat-test-42';
    // Short enough to see staleness within the test; the default is 120 s.
    const maxAge = 6;
    const env = {
      DATA_DIR: dataDir,
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      EMBEDDER: 'ollama',
      OLLAMA_HOST: 'http://127.0.0.1:9',
      ANTHROPIC_API_KEY: 'sk-ant-heartbeat-test-0000000000',
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_ALLOWED_USERS: String(ANA.id),
      TELEGRAM_HEARTBEAT_MAX_AGE: String(maxAge),
      ADMIN_TOKEN: adminToken,
      API_PORT: String(port),
    };
    const service = await startTs('src/main.ts', cleanEnv(env), /Nocturne is ready/);
    cleanups.push(async () => {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await service.exited;
    });
    const readyz = async () =>
      (await fetch(`http://127.0.0.1:${port}/readyz`)).json() as Promise<{
        checks: Record<string, string>;
        telegram?: { lastPollAt: string | null; maxAgeSeconds: number };
      }>;
    // The health check as Docker runs it: the container's environment, a process of its own.
    const healthcheck = () => runHealthcheck(env);
    const healthcheckWithoutApi = () => runHealthcheck({ ...env, ADMIN_TOKEN: '' });

    // 1. Start-up reached the Bot API: the heartbeat is there before the service says it is ready.
    const first = heartbeatAt(dataDir);
    expect(first).toBeDefined();
    expect(Date.now() - first!).toBeLessThan(30_000);

    // 2. Completed long polls refresh it (a message makes the held getUpdates return at once);
    //    writes are at most every 5 s.
    const refreshedBy = Date.now() + 30_000;
    let refreshed = first!;
    while (refreshed === first && Date.now() < refreshedBy) {
      fake.message(STRANGER, 'anyone there?');
      await sleep(1_000);
      refreshed = heartbeatAt(dataDir) ?? first!;
    }
    expect(refreshed).toBeGreaterThan(first!);
    expect(refreshed - first!).toBeGreaterThanOrEqual(5_000);
    expect(fake.sent(STRANGER.id).length).toBeGreaterThan(0);
    const polling = await readyz();
    expect(polling.checks.telegram).toBe('polling');
    expect(polling.telegram).toEqual({ lastPollAt: expect.any(String), maxAgeSeconds: maxAge });
    const healthy = await healthcheck();
    expect({ code: healthy.code, stderr: healthy.stderr }).toEqual({ code: 0, stderr: '' });

    // 3. The Bot API stops answering: every call is taken and never answered.
    fake.hang();
    await sleep(300);
    const lastBeat = heartbeatAt(dataDir)!;
    const staleBy = lastBeat + (maxAge + 1) * 1000;
    while (Date.now() < staleBy) {
      fake.message(STRANGER, 'hello?');
      await sleep(1_000);
    }
    // No poll completed: the heartbeat did not move.
    expect(heartbeatAt(dataDir)).toBe(lastBeat);
    expect((await readyz()).checks.telegram).toBe('stale');
    for (const result of [await healthcheck(), await healthcheckWithoutApi()]) {
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`unhealthy: the Telegram bot has not completed a poll for \\d+ s \\(limit ${maxAge} s\\)`));
    }

    // 4. The Bot API answers again: the next completed poll makes it healthy again.
    fake.hang(false);
    const backBy = Date.now() + 40_000;
    while ((heartbeatAt(dataDir) ?? 0) <= lastBeat && Date.now() < backBy) {
      fake.message(STRANGER, 'back?');
      await sleep(1_000);
    }
    expect(heartbeatAt(dataDir)).toBeGreaterThan(lastBeat);
    expect((await readyz()).checks.telegram).toBe('polling');
    expect(await healthcheck()).toMatchObject({ code: 0 });

    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(service.output()).not.toContain(fake.token);
  }, 180_000);
});
