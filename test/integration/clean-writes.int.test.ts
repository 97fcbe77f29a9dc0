/**
 * Memory that stays clean over months, on a real SQLite store and sqlite-vec with the local
 * USE-lite embedder (the one a fresh install uses) and a loopback consolidation model: a fact
 * restated in new words is one memory, not three; existing near-duplicates are folded while
 * dreaming; time alone never deactivates a memory.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createLocalEmbedder } from '../../src/vectors/embedders/local-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { isRestatement } from '../../src/memory/memories/restatements';
import { consolidationAnswerSchema } from '../../src/sleep/consolidation/operations';
import { uuidv7 } from '../../src/shared/ids';
import type { SleepJobContext } from '../../src/sleep/sleep-jobs';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { ScriptedLlmReply } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const DAY = 86_400_000;

describe('clean writes', () => {
  let core: Core;
  let llm: AnthropicDouble;
  let scopeId: string;
  // A model that reads a batch and says there is nothing to learn (an empty answer to the person's
  // words is a broken one, left pending: see consolidator.ts).
  const NOTHING = () => ({ nothing: 'nothing new to learn' });
  let answer: (prompt: string) => Record<string, unknown> = NOTHING;
  let entityAnswer: unknown = { entities: [] };
  let turn = 0;
  const start = new Date('2026-03-02T20:00:00Z');

  function night(now: Date): SleepJobContext {
    return { now, runId: uuidv7(), shouldContinue: () => true, tokenBudgetLeft: Number.POSITIVE_INFINITY };
  }

  async function say(at: Date, text: string): Promise<void> {
    await core.episodeService.ingestMany({ key: 'telegram:private:7', channel: 'telegram' }, [
      core.episodeService.normalize(
        { role: 'user', content: text, author: 'Dana', conversationId: `c-${turn}`, externalId: `t${turn++}`, timestamp: at.toISOString() },
        'telegram',
      ),
    ]);
  }

  beforeAll(async () => {
    llm = await startAnthropicDouble({
      responder: (request: { system?: string; messages: readonly { text: string }[] }): ScriptedLlmReply | undefined => {
        if (request.system?.includes('You maintain profiles')) return { kind: 'text', text: JSON.stringify(entityAnswer) };
        if (!request.system?.includes('memory consolidation system')) return undefined;
        return { kind: 'text', text: JSON.stringify(answer(request.messages.at(-1)!.text)) };
      },
    });
    const config = loadConfig({
      env: { DATA_DIR: tempDir(), LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-clean-000000', ANTHROPIC_BASE_URL: llm.url },
      envFile: false,
    });
    core = await createCore(config, memoryLogger().logger, { embedder: createLocalEmbedder({ runOn: 'main' }) });
    await say(start, 'hello');
    scopeId = (await core.scopes.findByKey('telegram:private:7'))!.id;
  });
  afterAll(async () => {
    await core?.close();
    await llm?.stop();
  });

  /** The episodes of a consolidation prompt whose text matches `pattern`, by the id the prompt shows. */
  function episodesMatching(prompt: string, pattern: RegExp): string[] {
    return prompt.split('\n').flatMap((line) => {
      const e = /^(E\d+) \S+ \S+ user[^:]*: (.*)$/.exec(line);
      return e && pattern.test(e[2]!) ? [e[1]!] : [];
    });
  }

  /** A model that files every night's statement about Dana as `new`, whatever the prompt shows. */
  function learnsAsNew(content: string, pattern: RegExp, category = 'preference') {
    return (prompt: string) => ({ new: [{ category, content, confidence: 0.9, source: 'stated', episodes: episodesMatching(prompt, pattern) }] });
  }

  const active = () => core.db.prisma.memory.findMany({ where: { scopeId, active: true, validTo: null }, orderBy: { createdAt: 'asc' } });

  describe('restatements', () => {
    it('three nights of the same fact in new words leave one memory, confirmed three times', async () => {
      const nights: Array<[said: string, learned: string]> = [
        ['I love black coffee', 'Dana loves black coffee'],
        ['Honestly I really enjoy drinking black coffee', 'Dana really enjoys drinking black coffee'],
        ['Black coffee is my favourite drink', "Dana's favourite drink is black coffee"],
      ];
      const reports = [];
      for (const [i, [said, learned]] of nights.entries()) {
        const day = new Date(start.getTime() + (i + 1) * DAY);
        await say(day, said);
        answer = learnsAsNew(learned, /coffee/i, i === 1 ? 'fact' : 'preference');
        reports.push(await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000))));
      }
      answer = NOTHING;
      const coffee = (await active()).filter((m) => /coffee/.test(m.content));
      expect(coffee.map((m) => m.content)).toEqual(['Dana loves black coffee']);
      expect(coffee[0]!.reinforcementCount).toBe(3);
      expect(await core.db.prisma.memorySource.count({ where: { memoryId: coffee[0]!.id } })).toBe(3);
      const audit = await core.db.prisma.auditEvent.findMany({ where: { scopeId, subjectId: coffee[0]!.id, action: 'reinforce' } });
      expect(audit.map((a) => a.reason)).toEqual([expect.stringMatching(/^restates memory/), expect.stringMatching(/^restates memory/)]);
    });

    it('without vectors only the same key words are a restatement, and numbers count whole', () => {
      expect(isRestatement('Ana prefers tea blend number 9', 'Ana prefers tea blend number 10', undefined)).toBe(false);
      expect(isRestatement('Ana has a cousin called Person0', 'Ana has a cousin called Person1', undefined)).toBe(false);
      expect(isRestatement('The user lives in Berlin', 'The user lives in Munich', 0.891)).toBe(false);
      expect(isRestatement("The user's dog is called Biscuit", 'The user has a dog called Biscuit.', undefined)).toBe(true);
    });

    it('related but different statements stay separate memories', async () => {
      const day = new Date(start.getTime() + 5 * DAY);
      await say(day, "My sister loves tea, and I've started to hate coffee");
      answer = (prompt) => {
        const episodes = episodesMatching(prompt, /sister/);
        return {
          new: [
            { category: 'relationship', content: "Dana's sister loves tea", confidence: 0.9, source: 'stated', episodes },
            { category: 'preference', content: 'Dana hates coffee', confidence: 0.9, source: 'stated', episodes },
          ],
        };
      };
      await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000)));
      answer = NOTHING;
      expect((await active()).map((m) => m.content)).toEqual(
        expect.arrayContaining(['Dana loves black coffee', "Dana's sister loves tea", 'Dana hates coffee']),
      );
    });

    it('the memory tools get the same rule: a restatement says what it did and adds no row', async () => {
      const day = new Date(start.getTime() + 6 * DAY);
      await say(day, 'My favourite drink? Black coffee, always');
      const episode = await core.db.prisma.episode.findFirstOrThrow({ where: { scopeId, content: { contains: 'always' } } });
      const before = await core.db.prisma.memory.count({ where: { scopeId } });
      const written = await core.memoryStore.remember(
        {
          scopeId,
          category: 'preference',
          content: 'Dana loves drinking black coffee',
          confidence: 0.7,
          sourceType: 'observed',
          sourceEpisodeIds: [episode.id],
        },
        { now: day },
      );
      expect(written.action).toBe('reinforced');
      expect(written.memory.content).toBe('Dana loves black coffee');
      expect(await core.db.prisma.memory.count({ where: { scopeId } })).toBe(before);
    });
  });

  describe('merge pass while dreaming', () => {
    it('folds existing near-duplicates: the weaker is superseded by the stronger, sources moved, counted in the run', async () => {
      const day = new Date(start.getTime() + 7 * DAY);
      await say(day, 'I work as a nurse at the city hospital');
      await say(new Date(day.getTime() + 60_000), "Yes, I'm a nurse at the city hospital");
      const [first, second] = await core.db.prisma.episode.findMany({ where: { scopeId, content: { contains: 'nurse' } }, orderBy: { timestamp: 'asc' } });
      // Written before the rule existed (or before either had a vector): two rows for one fact.
      const [weak, strong] = await core.db.prisma.$transaction(async (tx) => [
        await createMemory(
          tx,
          { scopeId, category: 'fact', content: 'Dana is a nurse at the city hospital', confidence: 0.7, sourceEpisodeIds: [second!.id] },
          { now: day },
        ),
        await createMemory(
          tx,
          { scopeId, category: 'fact', content: 'Dana works as a nurse at the city hospital', confidence: 0.9, sourceEpisodeIds: [first!.id] },
          { now: day },
        ),
      ]);
      expect(weak!.id).not.toBe(strong!.id);
      const report = await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000)));
      expect(report.outcome.status).toBe('succeeded');
      expect(report.dreaming.merged).toBe(1);
      const folded = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: weak!.id } });
      const kept = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: strong!.id } });
      expect(folded).toMatchObject({ active: false, supersededById: kept.id });
      expect(folded.validTo).not.toBeNull();
      expect(kept).toMatchObject({ active: true, reinforcementCount: 2 });
      expect((await core.db.prisma.memorySource.findMany({ where: { memoryId: kept.id } })).map((s) => s.episodeId).sort()).toEqual(
        [first!.id, second!.id].sort(),
      );
      expect(await core.db.prisma.memoryLink.count({ where: { fromId: kept.id, toId: folded.id, kind: 'supersedes' } })).toBe(1);
      expect(await core.db.prisma.auditEvent.count({ where: { scopeId, subjectId: folded.id, action: 'merge' } })).toBe(1);
      // What was learned before stays apart.
      expect((await active()).filter((m) => /coffee|tea/.test(m.content))).toHaveLength(3);
    });
  });

  describe('placeholders and the worked example', () => {
    it('refuses contents copied from the answer format, on consolidation and on every other write', async () => {
      const day = new Date(start.getTime() + 8 * DAY);
      await say(day, 'I started learning the cello');
      answer = (prompt) => {
        const episodes = episodesMatching(prompt, /cello/);
        return {
          new: ['...', '<fact>', 'string', 'TBD', 'Dana is learning the cello'].map((content) => ({
            category: 'skill',
            content,
            confidence: 0.9,
            source: 'stated',
            episodes,
          })),
        };
      };
      const report = await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000)));
      answer = NOTHING;
      expect(report.rejected.filter((r) => /placeholder/.test(r))).toHaveLength(4);
      const stored = await core.db.prisma.memory.findMany({ where: { scopeId, category: 'skill' } });
      expect(stored.map((m) => m.content)).toEqual(['Dana is learning the cello']);
      await expect(
        core.memoryStore.remember({ scopeId, category: 'fact', content: '<content>', confidence: 0.9 }, { now: day, by: 'owner' }),
      ).rejects.toMatchObject({ code: 'memory.placeholder' });
    });

    it('a memory that only quotes a message is refused as a transcript; reported speech is a statement', async () => {
      const day = new Date(start.getTime() + 7.5 * DAY);
      await say(day, "What a rainy day. By the way, I'm moving to Lyon in May");
      answer = (prompt) => {
        const episodes = episodesMatching(prompt, /rainy/);
        return {
          new: ['The user said: "What a rainy day."', 'Dana said “what a rainy day”', 'Dana said she is moving to Lyon in May'].map((content) => ({
            category: 'fact',
            content,
            confidence: 0.9,
            source: 'stated',
            episodes,
          })),
        };
      };
      const report = await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000)));
      answer = NOTHING;
      expect(report.rejected.filter((r) => /only quotes a message/.test(r))).toHaveLength(2);
      const stored = (await active()).map((m) => m.content);
      expect(stored).toContain('Dana said she is moving to Lyon in May');
      expect(stored.filter((c) => /rainy/i.test(c))).toEqual([]);
      await expect(
        core.memoryStore.remember({ scopeId, category: 'fact', content: 'Dana asked: "how are you?"', confidence: 0.9 }, { now: day, by: 'owner' }),
      ).rejects.toMatchObject({ code: 'memory.transcript' });
    });

    it('the consolidation system prompt carries a filled-in example that is itself a valid answer', async () => {
      const request = llm.requests.find((r) => r.system?.includes('memory consolidation system'))!;
      const example = /a good answer is:\n([\s\S]*?)\n\(/.exec(request.system!)![1]!;
      const parsed = consolidationAnswerSchema.parse(JSON.parse(example));
      // Distinct id kinds (issue 15): the reinforce names memory M1, the new memory cites episode E2.
      expect(parsed.reinforce[0]).toMatchObject({ memory: { kind: 'M', n: 1 }, episodes: [{ kind: 'E', n: 1 }] });
      expect(parsed.new[0]).toMatchObject({ content: 'The user has a sister named Priya who lives in Leeds', episodes: [{ kind: 'E', n: 2 }] });
      expect(JSON.stringify(parsed)).not.toMatch(/\.\.\.|<[a-z]+>/);
    });
  });

  describe('entity attributes', () => {
    it('are merged: a key left out stays, a key set changes, null removes only with evidence', async () => {
      const day = new Date(start.getTime() + 9 * DAY);
      const entity = await core.db.prisma.entity.create({
        data: { scopeId, key: 'priya', name: 'Priya', kind: 'person', attributes: { relation: 'sister', job: 'nurse', 'lives in': 'Leeds', pet: 'a cat' } },
      });
      for (const content of ['became a doctor this spring', 'moved away from Leeds', 'visits every Sunday']) {
        await core.db.prisma.entityObservation.create({ data: { scopeId, entityId: entity.id, content } });
      }
      entityAnswer = { entities: [{ entity: 1, attributes: { job: 'doctor', 'lives in': null, pet: null, visits: 'every Sunday' } }] };
      await say(day, 'Priya came by again');
      const report = await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000)));
      entityAnswer = { entities: [] };
      expect(report.dreaming.entitiesFolded).toBe(1);
      const row = await core.db.prisma.entity.findUniqueOrThrow({ where: { id: entity.id } });
      // relation: left out, kept; job: changed; lives in: null with evidence (Leeds named), removed;
      // pet: null without evidence, kept; visits: new.
      expect(row.attributes).toEqual({ relation: 'sister', job: 'doctor', pet: 'a cat', visits: 'every Sunday' });
    });
  });

  describe('entity aliases', () => {
    it('a relationship word later named resolves to one entity, and later mentions of either reach it', async () => {
      const nightly = async (offset: number, said: string, entity: Record<string, unknown>) => {
        const day = new Date(start.getTime() + offset * DAY);
        await say(day, said);
        answer = (prompt) => ({ entities: [{ kind: 'person', favorability: 0, ...entity, episodes: episodesMatching(prompt, /partner|Sam/) }] });
        await core.sleep.consolidateScope(scopeId, night(new Date(day.getTime() + 3 * 3_600_000)));
        answer = NOTHING;
      };
      await nightly(10, 'My partner is training for a marathon', { name: 'my partner', observations: ['training for a marathon'] });
      await nightly(11, 'Sam, my partner, ran 30 km today', { name: 'Sam', aliases: ['my partner'], observations: ['ran 30 km'] });
      await nightly(12, 'My partner is exhausted after the race', { name: 'My Partner', observations: ['exhausted after the race'] });
      const people = await core.db.prisma.entity.findMany({ where: { scopeId, key: { in: ['sam', 'my partner'] } }, include: { observations: true } });
      expect(people.map((p) => p.name)).toEqual(['Sam']);
      expect(people[0]!.attributes).toMatchObject({ aliases: 'my partner' });
      expect(people[0]!.observations.map((o) => o.content).sort()).toEqual(['exhausted after the race', 'ran 30 km', 'training for a marathon']);
    });
  });

  describe('decay floor', () => {
    it('scheduled decay stops at 0.3 and never deactivates an uncontradicted memory', async () => {
      const memory = await core.db.prisma.$transaction((tx) =>
        createMemory(tx, { scopeId, category: 'fact', content: 'Dana was born in Lisbon', confidence: 0.9 }, { now: start, by: 'owner' }),
      );
      let now = start;
      for (let month = 0; month < 30; month++) {
        now = new Date(now.getTime() + 30 * DAY + 3_600_000);
        await core.sleep.decay(scopeId, night(now));
      }
      const row = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: memory.id } });
      expect(row.active).toBe(true);
      expect(row.confidence).toBeCloseTo(0.3, 5);
      // Each step down is audited; once at the floor no further "decay" events are written.
      const steps = await core.db.prisma.auditEvent.count({ where: { scopeId, subjectId: memory.id, action: 'decay' } });
      expect(steps).toBe(11); // 0.9 x 0.9^10 = 0.314 > 0.3, the 11th step lands on the floor
      expect(await core.db.prisma.auditEvent.count({ where: { scopeId, subjectId: memory.id, action: 'deactivate' } })).toBe(0);
    });
  });
});
