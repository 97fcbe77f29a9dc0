/**
 * One scope policy, through `npm start` as a child process: the Telegram channel on the loopback
 * Bot API, the Anthropic double as its model (every request it saw is the log read here), the
 * Ollama double as its embedder, the admin API for the sleep run.
 *
 * - One consolidation batch uses one zone for every line: with a default zone (TZ) whose date
 *   differs from UTC's right now and a scope that names none, the date the prompt shows for
 *   "I have a dentist appointment tomorrow" and the date the memory learned from it states
 *   ("on YYYY-MM-DD") are a day apart, as the person meant.
 * - `/timezone Europe/Lisbon` reaches the very next reply's prompt without a restart: its "Now"
 *   line is Lisbon's time, and the soul in it states the new zone (rendered again at the change).
 *   A zone set by the CLI (another process) is seen by the next reply the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { formatLocalMinute } from '../../src/memory/digests/digest';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { runCli } from '../support/run-process';
import { startNocturne, type RunningNocturne } from '../support/service-harness';

const ANA = { id: 7301, first_name: 'Ana' };
const LISBON = 'Europe/Lisbon';
const TOKYO = 'Asia/Tokyo';
const DAY_MS = 86_400_000;
/** How long a reply may take (generous: a loaded 2-core machine). */
const REPLY_WAIT_MS = 120_000;

/**
 * A default zone whose calendar date is not UTC's for the next hours: 14 hours ahead from 10:00
 * UTC on, 11 hours behind before it. Lisbon's clock differs from both.
 */
function zoneAwayFromUtc(now: Date): string {
  return now.getUTCHours() >= 10 ? 'Pacific/Kiritimati' : 'Pacific/Pago_Pago';
}

const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const nextDay = (day: string) => isoDay(new Date(Date.parse(`${day}T00:00:00Z`) + DAY_MS));

describe('one scope policy through npm start (chaos)', () => {
  const defaultZone = zoneAwayFromUtc(new Date());
  let anthropic: AnthropicDouble;
  let ollama: OllamaDouble;
  let fake: FakeTelegramServer;
  let service: RunningNocturne;
  let scopeId: string;

  const call = async (method: string, route: string, body?: unknown): Promise<unknown> => {
    const response = await service.api(route, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
    return JSON.parse(text);
  };

  /** Sends `text` as Ana and returns the bot's answer. */
  async function say(text: string): Promise<string> {
    const before = fake.sent(ANA.id).length;
    fake.message(ANA, text);
    await fake.waitFor(() => fake.sent(ANA.id).length > before, REPLY_WAIT_MS, `the answer to "${text}"`);
    return fake
      .sent(ANA.id)
      .slice(before)
      .map((m) => m.text ?? '')
      .join('\n');
  }

  const replyRequests = () => anthropic.requests.filter((r) => r.system?.startsWith('You are Nocturne'));
  /** Everything the model read for a request: the system prompt and every message. */
  const shown = (r: SeenLlmRequest) => `${r.system ?? ''}\n${r.messages.map((m) => m.text).join('\n')}`;
  const soulText = async () => ((await call('GET', `/scopes/${scopeId}/export`)) as { profile: { soul: string } | null }).profile?.soul ?? '';

  beforeAll(async () => {
    // Consolidation learns the appointment from the person's words, "tomorrow" as said; everything
    // else (the replies) is answered "ok".
    anthropic = await startAnthropicDouble({
      responder: (seen) => {
        if (!seen.system?.includes('memory consolidation system')) return { kind: 'text', text: 'ok' };
        const prompt = seen.messages.at(-1)?.text ?? '';
        const episode = /^(E\d+) [^\n]* user[^\n]*dentist/m.exec(prompt)?.[1];
        if (!episode) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({
            new: [
              { category: 'fact', content: 'Ana has a dentist appointment tomorrow', confidence: 0.9, source: 'stated', importance: 0.6, episodes: [episode] },
            ],
          }),
        };
      },
    });
    ollama = await startOllamaDouble();
    fake = await startFakeTelegram();
    service = await startNocturne({
      telegram: { use: fake, allowedUsers: [ANA.id] },
      anthropic: { use: anthropic },
      ollama: { use: ollama },
      env: { TZ: defaultZone },
    });
    await say('I have a dentist appointment tomorrow.');
    const { scopes } = (await call('GET', '/scopes')) as { scopes: Array<{ id: string; key: string }> };
    scopeId = scopes.find((s) => s.key === `telegram:private:${ANA.id}`)!.id;
  }, 300_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await anthropic?.stop();
    await ollama?.stop();
    if (service) fs.rmSync(path.dirname(service.dataDir), { recursive: true, force: true });
  });

  it('uses one zone for every line of a consolidation batch: the date shown and the date learned agree', async () => {
    const { episodes } = (await call('GET', `/scopes/${scopeId}/episodes`)) as { episodes: Array<{ content: string; timestamp: string }> };
    const said = new Date(episodes.find((e) => e.content.includes('dentist'))!.timestamp);
    const localDay = formatLocalMinute(said, defaultZone).slice(0, 10);
    // The test can fail: the default zone's date of the message is not UTC's.
    expect(localDay).not.toBe(isoDay(said));

    const slept = (await call('POST', `/scopes/${scopeId}/sleep`, {})) as { outcome: { status: string } };
    expect(slept.outcome.status).toBe('succeeded');
    const prompt = anthropic.requests
      .filter((r) => r.system?.includes('memory consolidation system'))
      .at(-1)!
      .messages.at(-1)!.text;
    expect(prompt).toContain(`(times in ${defaultZone})`);
    expect(prompt).toMatch(new RegExp(`^E\\d+ ${localDay} \\d\\d:\\d\\d user \\(Ana\\): I have a dentist`, 'm'));

    const { memories } = (await call('GET', `/scopes/${scopeId}/memories`)) as { memories: Array<{ content: string }> };
    const learned = memories.map((m) => m.content).filter((c) => c.includes('dentist'));
    // "tomorrow" is the day after the day the prompt showed, not the day after UTC's.
    expect(learned).toEqual([`Ana has a dentist appointment on ${nextDay(localDay)}`]);
  }, 60_000);

  let nextPrompt: SeenLlmRequest;

  it('shows the new zone in the very next reply\'s "Now" after /timezone, without a restart', async () => {
    const before = replyRequests().at(-1)!;
    expect(before.system).toContain(`(${defaultZone}).`);
    expect(await say(`/timezone ${LISBON}`)).toContain(`your time zone is now ${LISBON}`);

    const asked = new Date();
    await say('what time is it for me?');
    const answered = new Date();
    nextPrompt = replyRequests().at(-1)!;
    expect(nextPrompt).not.toBe(before);
    const nowLine = /Now: (\d{4}-\d\d-\d\d \d\d:\d\d) \(([^)]+)\)\./.exec(nextPrompt.system ?? '');
    expect(nowLine?.[2]).toBe(LISBON);
    // The minute shown is Lisbon's, at some moment between the message and its answer.
    const minutes = new Set<string>();
    for (let t = asked.getTime() - 60_000; t <= answered.getTime() + 60_000; t += 30_000) minutes.add(formatLocalMinute(new Date(t), LISBON));
    expect([...minutes]).toContain(nowLine?.[1]);
  }, 60_000);

  it("renders the soul's zone line again at the change: the stored soul and that reply's prompt state the new zone", async () => {
    const soul = await soulText();
    expect(soul).toContain(`- Time zone: ${LISBON}`);
    expect(soul).not.toContain(defaultZone);
    expect(shown(nextPrompt)).toContain(`- Time zone: ${LISBON}`);
    expect(shown(nextPrompt)).not.toContain(defaultZone);
  });

  it('sees a zone set by the CLI in another process at the next reply: the agent caches no policy', async () => {
    const cli = await runCli(['timezone', '--scope', `telegram:private:${ANA.id}`, TOKYO], service.env);
    expect(cli.code).toBe(0);
    await say('and now?');
    const prompt = replyRequests().at(-1)!;
    expect(prompt.system).toMatch(new RegExp(`Now: \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d \\(${TOKYO}\\)\\.`));
    expect(shown(prompt)).toContain(`- Time zone: ${TOKYO}`);
  }, 90_000);
});
