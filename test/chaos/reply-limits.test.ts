/**
 * Hostile input, round three: one person's reply volume is bounded. `npm start` runs as a child
 * process with the webhook channel and the Anthropic SDK against the loopback double, which
 * counts the model calls.
 *
 * - 100 signed messages from one person in a burst (all sent at once): every message is stored,
 *   the model is called at most REPLY_RATE_PER_MINUTE times, and the person gets exactly one
 *   answer saying when they can continue (the other refused messages get an empty reply).
 * - The daily budget is counted from stored turns: after a restart (SIGTERM, `npm start` again
 *   with REPLY_DAILY_BUDGET just above what was spent) only the rest of the budget is answered.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { signRequest } from '../../src/channels/webhook/signature';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { startNocturne, type RunningNocturne } from '../support/service-harness';
import { elapsed } from './chaos-support';

const WEBHOOK_SECRET = 'whk-reply-limits-0123456789abcdef';
const RATE = 10;
const BURST = 100;
const PERSON = 'webhook:crm:flooder';

describe('hostile input, round three: per-person reply limits (chaos)', () => {
  const started = performance.now();
  const dataDir = path.join(tempDir('nocturne-chaos-reply-limits-'), 'data');
  const figures: Record<string, unknown> = {};
  let double: AnthropicDouble | undefined;
  let running: RunningNocturne | undefined;

  /** `npm start` on the same data folder and model double, with the webhook channel; its webhook base URL. */
  async function start(extra: Record<string, string>): Promise<string> {
    running = await startNocturne({ dataDir, webhookSecret: WEBHOOK_SECRET, anthropic: { use: double! }, env: extra });
    return running.webhookBase!;
  }
  async function stop(): Promise<void> {
    if (!running) return;
    expect(await running.stop()).toBe(0);
    running = undefined;
  }
  async function send(base: string, i: number): Promise<{ status: number; reply: string }> {
    const body = JSON.stringify({ user: 'flooder', text: `message number ${i}`, messageId: `m${i}` });
    const response = await fetch(`${base}/webhook/crm`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body }) },
      body,
    });
    const json = (await response.json()) as { reply?: string };
    return { status: response.status, reply: json.reply ?? '' };
  }
  function storedTurns(role: 'user' | 'agent'): number {
    const db = new Database(path.join(dataDir, 'nocturne.db'), { readonly: true });
    try {
      return (
        db.prepare('SELECT count(*) AS n FROM "Episode" e JOIN "Scope" s ON s."id" = e."scopeId" WHERE s."key" = ? AND e."role" = ?').get(PERSON, role) as {
          n: number;
        }
      ).n;
    } finally {
      db.close();
    }
  }

  afterAll(async () => {
    await running?.kill();
    await double?.stop();
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`reply-limits: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it(`${BURST} messages in a burst: all stored, at most ${RATE} model calls, one answer saying when to continue`, async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    const base = await start({ REPLY_RATE_PER_MINUTE: String(RATE) });
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => send(base, i)));
    const seconds = (performance.now() - t0) / 1000;
    const calls = double.requests.length;
    await stop();
    const notices = answers.filter((a) => /can answer again at/.test(a.reply));
    const summary = {
      seconds: Number(seconds.toFixed(1)),
      statuses: [...new Set(answers.map((a) => a.status))],
      modelCalls: calls,
      replies: answers.filter((a) => a.reply === 'Noted.').length,
      notices: notices.length,
      silent: answers.filter((a) => a.reply === '').length,
      storedUserTurns: storedTurns('user'),
      notice: notices[0]?.reply,
    };
    figures.burst = summary;
    expect(summary.statuses).toEqual([200]);
    expect(summary.storedUserTurns).toBe(BURST);
    expect(calls).toBeLessThanOrEqual(RATE);
    expect(summary.replies).toBe(calls);
    expect(summary.notices).toBe(1);
    expect(summary.notice).toMatch(new RegExp(`at most ${RATE} messages a minute.*saving everything.*can answer again at \\d\\d:\\d\\d:\\d\\d \\(UTC\\)`));
    expect(summary.replies + summary.notices + summary.silent).toBe(BURST);
  }, 240_000);

  it('the daily budget survives a restart: only what is left of it is answered', async () => {
    const spent = storedTurns('agent');
    const budget = spent + 2;
    const base = await start({ REPLY_RATE_PER_MINUTE: '0', REPLY_DAILY_BUDGET: String(budget) });
    const before = double!.requests.length;
    const answers: string[] = [];
    for (let i = BURST; i < BURST + 5; i++) answers.push((await send(base, i)).reply);
    const calls = double!.requests.length - before;
    await stop();
    figures.afterRestart = { spentBefore: spent, budget, modelCalls: calls, answers, storedUserTurns: storedTurns('user') };
    expect(calls).toBe(2);
    expect(answers.slice(0, 2)).toEqual(['Noted.', 'Noted.']);
    expect(answers[2]).toMatch(new RegExp(`today's limit of ${budget} replies.*can answer again at .*00:00:00 \\(UTC\\)`));
    expect(answers.slice(3)).toEqual(['', '']);
    expect(storedTurns('user')).toBe(BURST + 5);
  }, 240_000);
});
