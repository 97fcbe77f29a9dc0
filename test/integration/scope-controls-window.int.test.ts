/**
 * The sleep window's "next opening" a person and the admin API read: while the window is open it is
 * the opening after tonight's, the same whichever second it is asked (two reads of the settings
 * agree), and outside the window it is the coming one. Read through the service's own settings
 * door on a real SQLite store, at instants set by the core's clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createSilentLogger } from '../../src/shared/logger';
import { migratedDataDir } from '../support/databases';

describe('sleep window: the next opening', () => {
  let now = new Date('2026-03-10T03:00:00.000Z');
  let core: Core;
  let scopeId: string;

  beforeAll(async () => {
    const config = loadConfig({
      env: { DATA_DIR: migratedDataDir(), TZ: 'UTC', LOG_LEVEL: 'error', SLEEP_WINDOW_START: '2', SLEEP_WINDOW_HOURS: '4' },
      envFile: false,
    });
    core = await createCore(config, createSilentLogger(), { clock: () => now });
    scopeId = (await core.directory.ensure({ key: 'terminal:ana', channel: 'terminal' })).id;
  });
  afterAll(async () => {
    await core?.close();
  });

  it('inside the window: the opening after tonight, the same one second later', async () => {
    now = new Date('2026-03-10T03:00:00.000Z');
    const first = await core.scopeControls.get(scopeId);
    now = new Date('2026-03-10T03:00:01.000Z');
    const second = await core.scopeControls.get(scopeId);
    expect(first.inSleepWindow).toBe(true);
    expect(first.nextSleepWindow?.toISOString()).toBe('2026-03-11T02:00:00.000Z');
    expect(second.nextSleepWindow?.toISOString()).toBe(first.nextSleepWindow?.toISOString());
  });

  it('outside the window: the coming opening', async () => {
    now = new Date('2026-03-10T12:00:00.000Z');
    const view = await core.scopeControls.get(scopeId);
    expect(view.inSleepWindow).toBe(false);
    expect(view.nextSleepWindow?.toISOString()).toBe('2026-03-11T02:00:00.000Z');
    now = new Date('2026-03-10T01:59:00.000Z');
    expect((await core.scopeControls.get(scopeId)).nextSleepWindow?.toISOString()).toBe('2026-03-10T02:00:00.000Z');
  });
});
