/**
 * Consolidation never loses work, through the real Anthropic SDK against the loopback Messages
 * API: an empty or fully refused answer is asked again at once in halves, and what is still not
 * learned stays pending (with an attempt counted); the next runs ask about it in halved prompts,
 * and after the last attempt they are given up on with an audit event the digest reports; an
 * explicit "nothing to learn" is accepted; an answer cut off at the answer limit is asked again
 * about half the episodes at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { buildDigest } from '../../src/memory/digests/digest';
import { uuidv7 } from '../../src/shared/ids';
import type { SleepJobContext } from '../../src/sleep/sleep-jobs';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { ScriptedLlmReply } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const HOUR = 3_600_000;

interface PromptEpisode {
  n: number;
  role: string;
  text: string;
}

function episodesOf(prompt: string): PromptEpisode[] {
  return [...prompt.matchAll(/^E(\d+) \S+ \S+ (user|agent)[^:]*: (.*)$/gm)].map((m) => ({ n: Number(m[1]), role: m[2]!, text: m[3]! }));
}

type Mode = 'empty' | 'refused' | 'nothing' | 'cut-when-large' | 'learn';

describe('consolidation never loses work', () => {
  let core: Core;
  let llm: AnthropicDouble;
  let mode: Mode = 'empty';
  /** Episode counts of every consolidation prompt (first turn of each request). */
  let prompts: number[] = [];
  let turn = 0;

  function model(request: { system?: string; messages: readonly { text: string }[] }): ScriptedLlmReply | undefined {
    if (!request.system?.includes('memory consolidation system')) return undefined;
    const episodes = episodesOf(request.messages[0]!.text);
    const users = episodes.filter((e) => e.role === 'user');
    if (request.messages.length === 1) prompts.push(episodes.length);
    if (mode === 'empty') return { kind: 'text', text: '{}' };
    if (mode === 'refused')
      return {
        kind: 'text',
        text: JSON.stringify({ new: [{ category: 'fact', content: 'The user owns a boat', confidence: 0.9, source: 'stated', episodes: ['E99'] }] }),
      };
    if (mode === 'nothing') return { kind: 'text', text: JSON.stringify({ nothing: 'greetings only' }) };
    const answer = JSON.stringify({
      new: users.map((u) => ({
        category: /appointment|flying/.test(u.text) ? 'schedule' : 'fact',
        content: `The user said: ${u.text}`,
        confidence: 0.9,
        source: 'stated',
        episodes: [`E${u.n}`],
      })),
    });
    // A model whose answer limit holds one episode's worth: more is cut off mid-object.
    if (users.length > 1 && mode === 'cut-when-large') return { kind: 'text', text: answer.slice(0, answer.length - 30), stop: 'max_tokens' };
    return { kind: 'text', text: answer };
  }

  async function scopeWith(key: string, at: Date, lines: string[], conversations = 1): Promise<string> {
    await core.episodeService.ingestMany(
      { key, channel: 'telegram' },
      lines.map((content, i) =>
        core.episodeService.normalize(
          {
            role: 'user',
            content,
            author: 'Ana',
            conversationId: `${key}-c${i % conversations}`,
            externalId: `t${turn++}`,
            timestamp: new Date(at.getTime() + i * 60_000).toISOString(),
          },
          'telegram',
        ),
      ),
    );
    return (await core.scopes.findByKey(key))!.id;
  }

  function night(now: Date): SleepJobContext {
    return { now, runId: uuidv7(), shouldContinue: () => true, tokenBudgetLeft: Number.POSITIVE_INFINITY };
  }

  beforeAll(async () => {
    llm = await startAnthropicDouble({ responder: (seen) => model(seen) });
    const config = loadConfig({
      env: { DATA_DIR: tempDir(), LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-robust-000000', ANTHROPIC_BASE_URL: llm.url },
      envFile: false,
    });
    core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 256 }) });
  });
  afterAll(async () => {
    await core?.close();
    await llm?.stop();
  });

  it('an empty answer is asked again in halves, then left pending; later runs halve the prompt; the last attempt gives up with an audit the digest reports', async () => {
    const base = new Date(Date.now() + HOUR);
    const lines = [
      'My sister Lena moved to Porto last spring',
      'I started learning the cello in March',
      'We adopted a grey cat called Miso',
      'I work night shifts at the hospital',
    ];
    const scopeId = await scopeWith('telegram:private:501', base, lines);
    mode = 'empty';
    const sizes: number[][] = [];
    for (let run = 1; run <= 5; run++) {
      prompts = [];
      const report = await core.sleep.consolidateScope(scopeId, night(new Date(base.getTime() + run * HOUR)));
      sizes.push(prompts);
      expect(report.outcome.status).toBe('failed');
      const rows = await core.db.prisma.episode.findMany({ where: { scopeId } });
      expect(rows.every((e) => !e.consolidated && e.consolidationAttempts === run)).toBe(true);
    }
    // Each run asks once more at once in halves: four then two and two; then two (each asked
    // again as one and one); then one episode a prompt (the floor, nothing left to halve).
    expect(sizes).toEqual([
      [4, 2, 2],
      [2, 1, 1, 2, 1, 1],
      [1, 1, 1, 1],
      [1, 1, 1, 1],
      [1, 1, 1, 1],
    ]);
    const gaveUp = await core.db.prisma.auditEvent.findMany({ where: { scopeId, action: 'consolidation_gave_up' } });
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]!.subjectType).toBe('scope');
    expect((gaveUp[0]!.after as { episodes: number }).episodes).toBe(4);
    // Given up on: no further run asks about them.
    prompts = [];
    await core.sleep.consolidateScope(scopeId, night(new Date(base.getTime() + 6 * HOUR)));
    expect(prompts).toEqual([]);
    const digest = await buildDigest(core.db.prisma, scopeId, { periodEnd: new Date(base.getTime() + 7 * HOUR), now: new Date(base.getTime() + 7 * HOUR) });
    expect(digest.content).toContain('4 messages could not be learned from');
  });

  it('an answer whose every operation is refused counts an attempt and applies nothing', async () => {
    const base = new Date(Date.now() + HOUR);
    const scopeId = await scopeWith('telegram:private:502', base, ['I am training for the Lisbon marathon in October']);
    mode = 'refused';
    const report = await core.sleep.consolidateScope(scopeId, night(new Date(base.getTime() + HOUR)));
    expect(report.outcome.status).toBe('failed');
    expect(report.rejected.join('\n')).toMatch(/not in the prompt/);
    const row = await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId } });
    expect(row.consolidated).toBe(false);
    expect(row.consolidationAttempts).toBe(1);
    expect(await core.db.prisma.memory.count({ where: { scopeId } })).toBe(0);
  });

  it('an explicit "nothing to learn" marks a chit-chat batch consolidated', async () => {
    const base = new Date(Date.now() + HOUR);
    const scopeId = await scopeWith('telegram:private:503', base, ['hello there, how are you doing today?', 'ok thanks, good night then']);
    mode = 'nothing';
    const report = await core.sleep.consolidateScope(scopeId, night(new Date(base.getTime() + HOUR)));
    expect(report.outcome.status).toBe('succeeded');
    const rows = await core.db.prisma.episode.findMany({ where: { scopeId } });
    expect(rows.every((e) => e.consolidated && e.consolidationAttempts === 0)).toBe(true);
  });

  it('an answer cut off at the limit is asked again in halves, down to one episode, and everything is learned', async () => {
    const base = new Date(Date.now() + HOUR);
    const lines = ['I grow tomatoes on my balcony', 'My brother Tiago is a pilot', 'I prefer trains over planes', 'I am allergic to peanuts'];
    const scopeId = await scopeWith('telegram:private:504', base, lines, 2);
    mode = 'cut-when-large';
    prompts = [];
    const report = await core.sleep.consolidateScope(scopeId, night(new Date(base.getTime() + HOUR)));
    expect(report.outcome.status).toBe('succeeded');
    // 4 (cut, repaired, cut again) -> two conversations of 2 (cut) -> four single episodes.
    expect(prompts).toEqual([4, 2, 1, 1, 2, 1, 1]);
    const rows = await core.db.prisma.episode.findMany({ where: { scopeId } });
    expect(rows.every((e) => e.consolidated && e.consolidationAttempts === 0)).toBe(true);
    const memories = await core.db.prisma.memory.findMany({ where: { scopeId, validTo: null } });
    expect(memories.map((m) => m.content).sort()).toEqual(lines.map((l) => `The user said: ${l}`).sort());
  });

  it('relative dates in what is learned are resolved against the message\u2019s local day in the scope\u2019s time zone; the events expire after their date', async () => {
    // 02:30 UTC on Friday 6 March is still Thursday 5 March in New York.
    const said = new Date('2026-03-06T02:30:00Z');
    const scopeId = await scopeWith('telegram:private:505', said, ['I have a dentist appointment tomorrow', 'We are flying to Madeira next Friday']);
    await core.db.prisma.scope.update({ where: { id: scopeId }, data: { timezone: 'America/New_York' } });
    mode = 'learn';
    const report = await core.sleep.consolidateScope(scopeId, night(new Date(Date.now() + HOUR)));
    expect(report.outcome.status).toBe('succeeded');
    const memories = await core.db.prisma.memory.findMany({ where: { scopeId, validTo: null } });
    expect(memories.map((m) => m.content).sort()).toEqual([
      'The user said: I have a dentist appointment on 2026-03-06',
      'The user said: We are flying to Madeira on 2026-03-06',
    ]);

    // The events end: kept for two days after their date, then faded (audited), history kept.
    await core.sleep.decay(scopeId, night(new Date('2026-03-08T12:00:00Z')));
    expect(await core.db.prisma.memory.count({ where: { scopeId, active: true } })).toBe(2);
    const outcome = await core.sleep.decay(scopeId, night(new Date('2026-03-09T12:00:00Z')));
    expect(outcome.detail).toMatch(/2 past events/);
    expect(await core.db.prisma.memory.count({ where: { scopeId, active: true } })).toBe(0);
    const faded = await core.db.prisma.auditEvent.findMany({ where: { scopeId, action: 'deactivate' } });
    expect(faded.map((e) => e.reason)).toEqual(['the event on 2026-03-06 has passed', 'the event on 2026-03-06 has passed']);
  });
});
