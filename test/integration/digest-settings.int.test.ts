/**
 * The digest schedule from the operator's doors: the CLI as a child process (`digest --at/--off/
 * --on`, `timezone`) and the admin API over real HTTP (GET/PATCH /scopes/:id/settings). Each
 * change is validated, audited, and read by a scheduler that was already running when it was
 * made (no restart).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';
import { createApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { instantOf } from '../../src/shared/local-time';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runCli } from '../support/run-process';

const TOKEN = 'admin-token-0123456789abcdef';
const MADRID = 'Europe/Madrid';

describe('digest settings from the CLI and the admin API', () => {
  let core: Core;
  let app: FastifyInstance;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let now = new Date();
  const logs = memoryLogger();
  const later = new Date(Date.now() + 24 * 3_600_000);
  const day = (n: number, hour: number, minute: number, zone = MADRID) =>
    instantOf({ year: later.getUTCFullYear(), month: later.getUTCMonth() + 1, day: later.getUTCDate() + n, hour, minute }, zone);

  beforeAll(async () => {
    const dataDir = path.join(tempDir('nocturne-digest-settings-'), 'data');
    env = cleanEnv({ DATA_DIR: dataDir });
    // The running service's core: opened before any change, never restarted.
    core = await createCore(loadConfig({ env: { DATA_DIR: dataDir, TZ: 'UTC' }, envFile: false }), logs.logger, {
      embedder: createHashEmbedder({ dimension: 64 }),
      clock: () => now,
    });
    for (const key of ['telegram:private:555001', 'telegram:private:555002']) {
      const scope = await core.directory.ensure({ key, channel: 'telegram', kind: 'private' });
      await core.directory.setOwner(scope.id, key.split(':')[2]!);
    }
    app = await createApiServer({ ...core, timeZone: core.config.timeZone, token: TOKEN, logger: logs.logger });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await core?.close();
  });

  const cli = async (...args: string[]) => {
    const result = await runCli(args, env);
    return { ...result, json: result.code === 0 && args.includes('--json') ? (JSON.parse(result.stdout) as Record<string, unknown>) : undefined };
  };

  async function learn(key: string, content: string) {
    const scope = (await core.directory.findByKey(key))!;
    await core.db.prisma.$transaction((tx) => createMemory(tx, { scopeId: scope.id, category: 'fact', content, confidence: 0.9 }, { by: 'owner', now }));
    return scope.id;
  }

  it('the CLI shows and sets the time zone and the digest time, refuses bad values, and a running scheduler follows at once', async () => {
    const KEY = 'telegram:private:555001';
    expect((await cli('timezone', '--scope', KEY, '--json')).json).toMatchObject({
      scope: KEY,
      timezone: 'UTC',
      timezoneIsDefault: true,
      digestTime: '21:00',
      digestEnabled: true,
    });

    const bad = await cli('timezone', '--scope', KEY, 'Mars/Olympus');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"Mars/Olympus" is not an IANA time zone');

    const zone = await cli('timezone', '--scope', KEY, 'Europe/Madrid');
    expect(zone.code).toBe(0);
    expect(zone.stdout).toMatch(/^telegram:private:555001: time zone Europe\/Madrid; next digest \S+Z \(21:00 local\)\n$/);

    const badTime = await cli('digest', '--scope', KEY, '--at', '25:00');
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toContain('"25:00" is not a time of day as HH:MM');
    expect((await cli('digest', '--scope', KEY, '--at', '21:30', '--off')).code).toBe(2);

    const set = await cli('digest', '--scope', KEY, '--at', '21:30', '--json');
    expect(set.json).toMatchObject({ digestTime: '21:30', digestEnabled: true, timezone: MADRID, timezoneIsDefault: false, digestDelivered: true });
    expect(new Date(set.json!.nextDigest as string).getTime()).toBe(
      // The next 21:30 in Madrid after the real clock.
      [day(-2, 21, 30), day(-1, 21, 30), day(0, 21, 30)].find((d) => d.getTime() >= Date.now())!.getTime(),
    );
    expect((await cli('digest', '--scope', KEY, '--schedule')).stdout).toMatch(/^telegram:private:555001: digest every day at 21:30 \(Europe\/Madrid\), next /);

    // Audited, with the command line as the reason.
    const scopeId = (await core.directory.findByKey(KEY))!.id;
    const events = await core.db.prisma.auditEvent.findMany({ where: { scopeId, action: 'settings' }, orderBy: { createdAt: 'asc' } });
    expect(events.map((e) => [e.after, e.reason])).toEqual([
      [{ timezone: MADRID }, 'changed from the command line'],
      [{ digestTime: '21:30' }, 'changed from the command line'],
    ]);

    // The scheduler that was running all along builds it at 21:30 Madrid, not at 21:00.
    now = day(0, 12, 0);
    await learn(KEY, 'Ana keeps bees');
    expect((await core.scheduler.runDigests(day(0, 21, 29))).scopes.filter((s) => s.scopeKey === KEY)).toEqual([]);
    const due = await core.scheduler.runDigests(day(0, 21, 30));
    expect(due.scopes.filter((s) => s.scopeKey === KEY).map((s) => s.status)).toEqual(['succeeded']);

    // Off from the CLI: the next evening builds nothing.
    const off = await cli('digest', '--scope', KEY, '--off', '--json');
    expect(off.json).toMatchObject({ digestEnabled: false, nextDigest: null });
    now = day(1, 12, 0);
    await learn(KEY, 'Ana bought a smoker for the hives');
    expect((await core.scheduler.runDigests(day(1, 21, 31))).scopes.filter((s) => s.scopeKey === KEY)).toEqual([]);
    expect((await cli('digest', '--scope', KEY, '--on', '--json')).json).toMatchObject({ digestEnabled: true, digestTime: '21:30' });
  }, 180_000);

  it('the admin API reads and patches the settings by key or id, validates, audits, and the scheduler follows', async () => {
    const KEY = 'telegram:private:555002';
    const call = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${base}${url}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };
    const path = `/scopes/${encodeURIComponent(KEY)}/settings`;
    now = new Date();
    expect(await call('GET', path)).toEqual({
      status: 200,
      json: expect.objectContaining({
        scope: KEY,
        digestTime: '21:00',
        digestTimeIsDefault: true,
        digestEnabled: true,
        timezone: 'UTC',
        timezoneIsDefault: true,
        digestDelivered: true,
      }),
    });
    expect((await call('PATCH', path, { timezone: 'Mars/Olympus' })).status).toBe(400);
    expect((await call('PATCH', path, { digestTime: '7pm' })).status).toBe(400);
    expect((await call('PATCH', path, { digestHour: 7 })).status).toBe(400);
    expect((await call('PATCH', '/scopes/telegram%3Aprivate%3A999/settings', { digestEnabled: false })).status).toBe(404);
    expect(await core.db.prisma.auditEvent.count({ where: { action: 'settings', scope: { key: KEY } } })).toBe(0);

    const patched = await call('PATCH', path, { timezone: 'America/New_York', digestTime: '07:15' });
    expect(patched).toMatchObject({ status: 200, json: { scope: KEY, digestTime: '07:15', timezone: 'America/New_York', digestEnabled: true } });
    const scopeId = (await core.directory.findByKey(KEY))!.id;
    expect((await call('GET', `/scopes/${scopeId}/settings`)).json).toMatchObject({ digestTime: '07:15', timezone: 'America/New_York' });
    const events = await core.db.prisma.auditEvent.findMany({ where: { scopeId, action: 'settings' } });
    expect(events.map((e) => [e.before, e.after, e.reason])).toEqual([
      [{ digestTime: null, timezone: null }, { digestTime: '07:15', timezone: 'America/New_York' }, 'changed through the admin API'],
    ]);

    // The scheduler reads it at its next check: 07:15 in New York, the day after the change.
    now = day(2, 1, 0, 'America/New_York');
    await learn(KEY, 'Ben repairs clocks');
    expect((await core.scheduler.runDigests(day(2, 7, 14, 'America/New_York'))).scopes.filter((s) => s.scopeKey === KEY)).toEqual([]);
    expect((await core.scheduler.runDigests(day(2, 7, 15, 'America/New_York'))).scopes.filter((s) => s.scopeKey === KEY).map((s) => s.status)).toEqual([
      'succeeded',
    ]);

    expect((await call('PATCH', path, { digestEnabled: false })).json).toMatchObject({ digestEnabled: false, nextDigest: null });
    now = day(3, 1, 0, 'America/New_York');
    await learn(KEY, 'Ben fixed a cuckoo clock');
    expect((await core.scheduler.runDigests(day(3, 7, 16, 'America/New_York'))).scopes.filter((s) => s.scopeKey === KEY)).toEqual([]);
  });
});
