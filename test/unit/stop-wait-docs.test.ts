/**
 * The stop waits the docs state are the ones the code waits: a person reading "a stop waits 30 s"
 * while it waits 4 s plans a deployment (a supervisor's grace period, a rolling restart) on the
 * wrong figure. Each documented figure is read from the doc and compared with the constant the
 * stop uses; a figure the code has no wait for (a confirmation at the stop, which polling no
 * longer owes) must not be stated.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { STOP_POLL_MS, STOP_UPDATES_MS } from '../../src/channels/telegram/telegram-polling';
import { STOP_BUDGET_MS, STOP_WATCHDOG_MS } from '../../src/service';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/\s+/g, ' ');
const seconds = (ms: number) => ms / 1000;

/** Every number the pattern's first group captures in `text`, as seconds. */
function stated(text: string, pattern: RegExp): number[] {
  return [...text.matchAll(new RegExp(pattern.source, 'g'))].map((m) => Number(m[1]));
}

describe('the stop waits in the docs', () => {
  const channels = read('docs/channels.md');
  const reliability = read('docs/reliability.md');
  const deploy = read('docs/deploy.md');

  it('docs/channels.md: updates in progress get what the polling stop gives them', () => {
    const figures = stated(channels, /finish(?: \([^)]*\))? for up to (\d+) seconds/);
    process.stderr.write(`stop-wait-docs: channels.md says ${JSON.stringify(figures)} s; the code waits ${seconds(STOP_UPDATES_MS)} s\n`);
    expect(figures.length).toBeGreaterThanOrEqual(2);
    for (const figure of figures) expect(figure).toBe(seconds(STOP_UPDATES_MS));
    for (const figure of stated(channels, /bounded at (\d+) s \(`STOP_BUDGET_MS`\)/)) expect(figure).toBe(seconds(STOP_BUDGET_MS));
  });

  it('docs/reliability.md: the budget, the long poll, the updates and the watchdog as the code has them', () => {
    const item = /SIGTERM ends the service within 10 s whatever is pending\.\*\*(.*?)`test\/chaos\/stop-deadline\.test\.ts`/.exec(reliability)?.[1] ?? '';
    expect(item).not.toBe('');
    expect(stated(item, /an (\d+(?:\.\d+)?) s budget/)).toEqual([seconds(STOP_BUDGET_MS)]);
    expect(stated(item, /(\d+(?:\.\d+)?) s to let go of its long poll/)).toEqual([seconds(STOP_POLL_MS)]);
    expect(stated(item, /updates in progress (\d+(?:\.\d+)?) s/)).toEqual([seconds(STOP_UPDATES_MS)]);
    expect(stated(item, /watchdog exits at (\d+(?:\.\d+)?) s/)).toEqual([seconds(STOP_WATCHDOG_MS)]);
    // Polling records an update before confirming it: a stop owes Telegram no confirmation, so no wait for one.
    expect(item).not.toMatch(/confirmation[^.;]*\d+(?:\.\d+)? s/);
  });

  it('docs/deploy.md: the stop ends before Docker kills it', () => {
    expect(stated(deploy, /within the (\d+) s stop budget/)).toEqual([seconds(STOP_BUDGET_MS)]);
    expect(stated(deploy, /by (\d+(?:\.\d+)?) s in any case/)).toEqual([seconds(STOP_WATCHDOG_MS)]);
    expect(STOP_WATCHDOG_MS).toBeLessThan(10_000);
  });
});
