/**
 * How long a person's words wait to be learned, through the composed service (`startService`, the
 * wiring `npm start` runs) on its default settings: messages arrive over the signed webhook
 * channel at simulated times, the service's clock is moved with them, and the service's own sleep
 * scheduler ticks the night after. The loopback model (the memory bench's, without mistakes)
 * answers replies and consolidation, and its request log says which scopes were consolidated.
 *
 * Three scopes, the tick at 05:00 UTC, inside the default 02:00-06:00 window:
 * - 12 messages of the last day: a batch of 24 episodes, consolidated tonight;
 * - 3 messages, the oldest 25 h old: too few for a batch, but waiting longer would pass a day;
 * - 3 messages said 2 h ago, after tonight's window opened: they wait for tomorrow night's window,
 *   which is still under a day after they were said.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { startService, type RunningService } from '../../src/service';
import { createSilentLogger } from '../../src/shared/logger';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { createMisbehavingModel, type MisbehavingModel } from '../../bench/memory/misbehaving-model';
import { freePort } from '../support/free-port';

const SECRET = 'sleep-lag-webhook-secret-0000';
const SOURCE = 'lag';
const HOUR_MS = 3_600_000;
const DAY = Date.parse('2026-03-10T00:00:00Z');
const at = (hours: number) => new Date(DAY + hours * HOUR_MS);
/** The night's tick: 05:00 the next day, inside the default window (02:00 for 4 h, UTC here). */
const TICK = at(24 + 5);
/** Tomorrow night's first tick in the window. */
const NEXT_NIGHT = at(48 + 2);

const FACTS = [
  'I live in Lisbon.',
  'My dog Biscuit chewed my shoe.',
  'I play the cello.',
  'My sister Rosa is visiting.',
  'I support Benfica.',
  'My favourite food is ramen.',
];

describe('consolidation lag (composed service, default schedule)', () => {
  let double: AnthropicDouble;
  let model: MisbehavingModel;
  let service: RunningService;
  let dir: string;
  let url: string;
  let now = at(0);
  let sent = 0;

  async function say(user: string, text: string, when: Date): Promise<void> {
    now = when;
    await service.core.embeddingWorker.drain();
    const body = JSON.stringify({ user, name: user, text, timestamp: when.toISOString(), messageId: `${user}-${sent++}` });
    const headers = { 'content-type': 'application/json', ...signRequest({ secret: SECRET, method: 'POST', path: `/webhook/${SOURCE}`, body }) };
    const response = await fetch(`${url}/webhook/${SOURCE}`, { method: 'POST', headers, body });
    expect(response.status).toBe(200);
  }

  async function pendingOf(user: string): Promise<number> {
    const scope = (await service.core.db.prisma.scope.findMany()).find((s) => s.key.endsWith(`:${user}`));
    if (!scope) throw new Error(`no scope for ${user}`);
    return service.core.db.prisma.episode.count({ where: { scopeId: scope.id, consolidated: false } });
  }

  beforeAll(async () => {
    model = createMisbehavingModel({
      seed: 3,
      rates: { restateAsNew: 0, reextract: 0, filler: 0, placeholder: 0, omitField: 0, wrongId: 0, aboutAssistant: 0, cutOff: 0, changeAsNew: 0 },
    });
    double = await startAnthropicDouble({ responder: model.responder });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-sleep-lag-'));
    // Only what the test needs to run offline; the schedule is the service's default.
    const config = loadConfig({
      env: {
        DATA_DIR: dir,
        LOG_LEVEL: 'error',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'lag-key-0000000000',
        ANTHROPIC_BASE_URL: double.url,
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_PORT: String(await freePort()),
        SLEEP_ENABLED: 'false',
        TERMINAL: 'off',
        TZ: 'UTC',
      },
      envFile: false,
    });
    service = await startService(
      config,
      createSilentLogger(),
      { input: process.stdin, output: process.stdout },
      {
        embedder: createHashEmbedder({ dimension: 256 }),
        clock: () => now,
      },
    );
    url = `http://127.0.0.1:${config.webhook!.port}`;

    // 3 messages from 04:00 of the day before (25 h before the tick).
    for (let i = 0; i < 3; i++) await say('quiet', FACTS[i]!, new Date(at(4).getTime() + i * 60_000));
    // 12 messages through the last day.
    for (let i = 0; i < 12; i++) await say('daily', FACTS[i % FACTS.length]!, at(9 + i));
    // 3 messages at 03:00, after the window opened: 2 h before the tick.
    for (let i = 0; i < 3; i++) await say('late', FACTS[i + 3]!, new Date(at(24 + 3).getTime() + i * 60_000));
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await double?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('learns a day of talk and a message about to wait a day in the next window; leaves a message said inside it for the next night', async () => {
    now = TICK;
    await service.core.embeddingWorker.drain();
    const before = model.calls.filter((c) => c.purpose === 'consolidation').length;
    const report = await service.core.scheduler.runConsolidation(TICK);
    const statusOf = (user: string) => report.scopes.find((s) => s.scopeKey.endsWith(`:${user}`));

    expect(statusOf('daily')).toMatchObject({ status: 'succeeded' });
    expect(statusOf('quiet')).toMatchObject({ status: 'succeeded' });
    expect(statusOf('late')).toMatchObject({ status: 'not-due' });
    expect(await pendingOf('daily')).toBe(0);
    expect(await pendingOf('quiet')).toBe(0);
    expect(await pendingOf('late')).toBe(6);
    // One call per scope where the batch fits in one prompt.
    expect(model.calls.filter((c) => c.purpose === 'consolidation').length - before).toBe(2);

    now = NEXT_NIGHT;
    const tomorrow = await service.core.scheduler.runConsolidation(NEXT_NIGHT);
    expect(tomorrow.scopes.find((s) => s.scopeKey.endsWith(':late'))).toMatchObject({ status: 'succeeded' });
    expect(await pendingOf('late')).toBe(0);
    // 23 h after the message, within the bound.
    expect(NEXT_NIGHT.getTime() - at(27).getTime()).toBeLessThan(24 * HOUR_MS);
  }, 120_000);
});
