/**
 * Capped mode, the sleep window and the two daily budgets from the operator's doors: the CLI as a
 * child process (`settings --scope S ...`) and the admin API over real HTTP (GET/PATCH
 * /scopes/:id/settings). Each setting round-trips through both (set in one, read in the other),
 * a bad value is refused with a message naming it and nothing changes, every change is audited,
 * and the core that was open all along (a running service: never restarted) follows at once: the
 * scope policy reports the new cap and budgets, and the scheduler's consolidation tick moves with
 * the window.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { policyDefaults, resolvePolicy } from '../../src/memory/scopes/scope-policy';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runCli } from '../support/run-process';

const TOKEN = 'admin-token-0123456789abcdef';
const KEY = 'terminal:ines';
const HOUR_MS = 3_600_000;

describe('scope settings from the CLI and the admin API', () => {
  let core: Core;
  let app: FastifyInstance;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let scopeId: string;
  const logs = memoryLogger();
  // Noon UTC tomorrow: outside the default window (02:00-06:00 UTC).
  const tomorrow = new Date(Date.now() + 24 * HOUR_MS);
  const noon = new Date(Date.UTC(tomorrow.getUTCFullYear(), tomorrow.getUTCMonth(), tomorrow.getUTCDate(), 12, 0));

  const cli = async (...args: string[]) => {
    const result = await runCli(args, env);
    return { ...result, json: result.code === 0 && args.includes('--json') ? (JSON.parse(result.stdout) as Record<string, unknown>) : undefined };
  };
  const call = async (method: string, url: string, body?: unknown) => {
    const response = await fetch(`${base}${url}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };
  const settingsPath = `/scopes/${encodeURIComponent(KEY)}/settings`;
  const row = async () => (await core.db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).settings;
  const policy = async () => resolvePolicy(await core.db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } }), policyDefaults(core.config));
  const audits = () => core.db.prisma.auditEvent.findMany({ where: { scopeId, action: 'settings' }, orderBy: { createdAt: 'asc' } });
  /** What the running scheduler's consolidation tick says of the scope at `at`. */
  const tick = async (at: Date) => (await core.scheduler.runConsolidation(at)).scopes.find((s) => s.scopeKey === KEY);

  beforeAll(async () => {
    const dataDir = path.join(tempDir('nocturne-scope-settings-'), 'data');
    const settings = { DATA_DIR: dataDir, TZ: 'UTC', SLEEP_MIN_EPISODES: '1', SLEEP_IDLE_MINUTES: '0' };
    env = cleanEnv(settings);
    // The running service's core: opened before any change, never restarted.
    core = await createCore(loadConfig({ env: settings, envFile: false }), logs.logger, { embedder: createHashEmbedder({ dimension: 64 }) });
    const ingested = await core.episodeService.ingest(
      { key: KEY, channel: 'terminal', kind: 'user' },
      { content: 'I keep two cats, Miso and Nori.', author: 'Ines', timestamp: new Date(noon.getTime() - 6 * HOUR_MS).toISOString() },
    );
    scopeId = (await core.directory.findByKey(KEY))!.id;
    expect(ingested).toBeTruthy();
    app = await createApiServer({ ...core, timeZone: core.config.timeZone, token: TOKEN, logger: logs.logger });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await core?.close();
  });

  it('the CLI sets each setting, the admin API reads it back, the policy and the scheduler follow at once', async () => {
    const defaults = await cli('settings', '--scope', KEY, '--json');
    expect(defaults.json).toEqual({
      scope: KEY,
      cappedMode: false,
      memoryCap: null,
      sleepWindow: '02:00-06:00',
      sleepWindowIsDefault: true,
      inSleepWindow: expect.any(Boolean),
      nextSleepWindow: expect.any(String),
      sleepDailyTokenBudget: 200_000,
      sleepDailyTokenBudgetIsDefault: true,
      replyDailyBudget: 500,
      replyDailyBudgetIsDefault: true,
      timezone: 'UTC',
    });
    // Before: at noon the default window is closed.
    expect(await tick(noon)).toMatchObject({ status: 'not-due', detail: expect.stringContaining('outside the sleep window (2:00 for 4 h, UTC)') });

    const set = await cli(
      'settings',
      '--scope',
      KEY,
      '--capped',
      'on',
      '--sleep-window',
      '11:00-14:00',
      '--sleep-budget',
      '50000',
      '--reply-budget',
      '40',
      '--json',
    );
    expect(set.code).toBe(0);
    expect(set.json).toMatchObject({ cappedMode: true, memoryCap: 10, sleepWindow: '11:00-14:00', sleepDailyTokenBudget: 50_000, replyDailyBudget: 40 });
    expect((await call('GET', settingsPath)).json).toMatchObject({
      scope: KEY,
      cappedMode: true,
      memoryCap: 10,
      sleepWindow: '11:00-14:00',
      sleepWindowIsDefault: false,
      sleepDailyTokenBudget: 50_000,
      sleepDailyTokenBudgetIsDefault: false,
      replyDailyBudget: 40,
      replyDailyBudgetIsDefault: false,
      digestTime: '21:00',
    });
    expect(await policy()).toMatchObject({
      memoryCap: 10,
      sleepWindow: { startHour: 11, durationHours: 3 },
      dailyTokenBudget: 50_000,
      replyDailyBudget: 40,
      problems: [],
    });
    // After: the scheduler that was running all along now finds noon inside the window.
    const moved = await tick(noon);
    expect(moved?.detail ?? '').not.toContain('outside the sleep window');
    expect(moved?.status).not.toBe('not-due');
    // And 15:00 outside it, naming the new window.
    expect(await tick(new Date(noon.getTime() + 3 * HOUR_MS))).toMatchObject({ status: 'not-due', detail: expect.stringContaining('11:00 for 3 h') });

    const [event] = await audits();
    expect(event).toMatchObject({
      before: { memoryCap: null, sleepWindow: null, dailyTokenBudget: null, replyDailyBudget: null },
      after: { memoryCap: 10, sleepWindow: { startHour: 11, durationHours: 3 }, dailyTokenBudget: 50_000, replyDailyBudget: 40 },
      reason: 'changed from the command line',
    });

    // Text form, and a cap of its own.
    const text = await cli('settings', '--scope', KEY, '--capped', '25');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('capped mode    on, at most 25 memories');
    expect(text.stdout).toContain('reply budget   40 replies a day');
  }, 480_000);

  it('the CLI refuses bad values with a message naming each, and changes nothing', async () => {
    const before = await row();
    const auditsBefore = (await audits()).length;
    const cases: Array<[string[], RegExp]> = [
      [['--sleep-window', '25:00-03:00'], /sleep window: "25:00-03:00" names an hour past 24:00/i],
      [['--sleep-window', '02:30-05:00'], /does not start and end on the hour/],
      [['--sleep-window', '04:00-04:00'], /is empty/],
      [['--reply-budget=-3'], /reply budget: -3 is not a whole number of replies from 0/i],
      [['--sleep-budget', 'lots'], /--sleep-budget takes a whole number or default, not "lots"/],
      [['--capped', '0'], /memory cap: 0 is not a whole number from 1/i],
      [['--capped', 'maybe'], /--capped takes on, off or a number/],
      [['--cap', 'on'], /Unknown option '--cap'/],
      // One bad option among good ones: none of them is applied.
      [['--reply-budget', '7', '--sleep-window', '9-9'], /is empty/],
    ];
    for (const [args, message] of cases) {
      const result = await cli('settings', '--scope', KEY, ...args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(message);
    }
    expect(await row()).toEqual(before);
    expect(await audits()).toHaveLength(auditsBefore);
  }, 480_000);

  it('the admin API patches each setting, the CLI reads it back; bad bodies are 400 and change nothing', async () => {
    const before = await row();
    const auditsBefore = (await audits()).length;
    const refused: Array<[unknown, RegExp]> = [
      [{ sleepWindow: '22:00-22:00' }, /is empty/],
      [{ sleepWindow: 'night' }, /is not a window/],
      [{ replyDailyBudget: -1 }, /replyDailyBudget: must be an integer from 0 to 1000000/],
      [{ sleepDailyTokenBudget: 1.5 }, /sleepDailyTokenBudget: must be an integer/],
      [{ memoryCap: 0 }, /memoryCap: must be an integer from 1/],
      [{ cappedMode: false, memoryCap: 12 }, /contradict/],
      [{ capped: true }, /capped/],
      // A good digest time beside a bad window: neither is written.
      [{ digestTime: '07:00', sleepWindow: '7-7' }, /is empty/],
    ];
    for (const [body, message] of refused) {
      const answer = await call('PATCH', settingsPath, body);
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      expect(JSON.stringify(answer.json)).toMatch(message);
    }
    expect(await row()).toEqual(before);
    expect(await audits()).toHaveLength(auditsBefore);
    expect((await call('PATCH', '/scopes/terminal%3Anobody/settings', { replyDailyBudget: 3 })).status).toBe(404);

    const patched = await call('PATCH', settingsPath, { cappedMode: false, sleepWindow: '23:00-07:00', sleepDailyTokenBudget: 0, replyDailyBudget: null });
    expect(patched).toMatchObject({
      status: 200,
      json: {
        cappedMode: false,
        memoryCap: null,
        sleepWindow: '23:00-07:00',
        sleepDailyTokenBudget: 0,
        replyDailyBudget: 500,
        replyDailyBudgetIsDefault: true,
      },
    });
    expect((await cli('settings', '--scope', scopeId, '--json')).json).toMatchObject({
      cappedMode: false,
      sleepWindow: '23:00-07:00',
      sleepDailyTokenBudget: 0,
      replyDailyBudget: 500,
      replyDailyBudgetIsDefault: true,
    });
    expect(await policy()).toMatchObject({
      memoryCap: undefined,
      sleepWindow: { startHour: 23, durationHours: 8 },
      dailyTokenBudget: 0,
      replyDailyBudget: 500,
    });
    const last = (await audits()).at(-1)!;
    expect(last).toMatchObject({
      before: { memoryCap: 25, sleepWindow: { startHour: 11, durationHours: 3 }, dailyTokenBudget: 50_000, replyDailyBudget: 40 },
      after: { memoryCap: null, sleepWindow: { startHour: 23, durationHours: 8 }, dailyTokenBudget: 0, replyDailyBudget: null },
      reason: 'changed through the admin API',
    });
    // The window moved again: noon is outside it, midnight inside.
    expect(await tick(noon)).toMatchObject({ status: 'not-due', detail: expect.stringContaining('23:00 for 8 h') });
    expect((await call('PATCH', settingsPath, { cappedMode: true })).json).toMatchObject({ cappedMode: true, memoryCap: 10 });
    expect((await call('PATCH', settingsPath, { memoryCap: 3, sleepWindow: null })).json).toMatchObject({
      memoryCap: 3,
      sleepWindow: '02:00-06:00',
      sleepWindowIsDefault: true,
    });
  }, 480_000);
});
