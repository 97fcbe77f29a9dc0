/**
 * Contradictions resolved, not hidden, end to end:
 * - Telegram (real grammY against the loopback Bot API, consolidation by the loopback model):
 *   a contradiction found by /sleep leaves the soul stating only the likely-current side; the
 *   digest asks "Which is true?" with one-tap buttons whose callback data is a memory id, never
 *   text; a press supersedes the other side, audited. A restatement of one side settles it too.
 * - The terminal (`npm run cli -- chat` as a child process, the loopback model's request log):
 *   while the conflict is open the request sent to the model shows both sides annotated with
 *   dates and which is newer; `/keep N` answers the digest and supersedes the other side.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore } from '../../src/core';
import { buildDigest, markSent } from '../../src/memory/digests/digest';
import { contradictMemory, createMemory } from '../../src/memory/memories/memory-writer';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SentMessage } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runTs } from '../support/run-process';
import { ANA, converse, startHarness, type Harness } from './telegram-harness';

const TIMEOUT = 120_000;
const DAY = 86_400_000;

describe('contradictions on Telegram', () => {
  let h: Harness;
  let model: AnthropicDouble;
  let ana: string;
  const buttons = (message: SentMessage) =>
    (message.reply_markup?.inline_keyboard ?? []).flat().flatMap((b) => ('callback_data' in b ? [{ text: b.text, data: b.callback_data }] : []));

  beforeAll(async () => {
    // The consolidation "model": a move contradicts where Ana lives; "still at the aquarium" restates a side.
    model = await startAnthropicDouble({
      responder: (seen) => {
        const prompt = seen.messages.at(-1)?.text ?? '';
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: 'ok' };
        const episode = (words: string) =>
          /^(E\d+) .*$/m.exec(
            prompt
              .split('\n')
              .filter((l) => l.includes(words))
              .join('\n'),
          )?.[1];
        const memory = (words: string) => new RegExp(`^(M\\d+) \\[[^\\]]*\\] ${words}`, 'm').exec(prompt)?.[1];
        const moved = episode('to Lisbon last month');
        const still = episode('still work at the aquarium');
        const porto = memory('Ana lives in Porto');
        return {
          kind: 'text',
          text: JSON.stringify({
            contradict: moved && porto ? [{ memory: porto, content: 'Ana lives in Lisbon', episodes: [moved], reason: 'she says she moved' }] : [],
            new: still ? [{ category: 'fact', content: 'Ana works at the aquarium', confidence: 0.9, source: 'stated', episodes: [still] }] : [],
          }),
        };
      },
    });
    h = await startHarness({ env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-conflicts-000000', ANTHROPIC_BASE_URL: model.url } });
    await converse(h.fake, ANA, 'hello');
    ana = (await h.core.db.prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } })).id;
    await h.core.db.prisma.$transaction((tx) =>
      createMemory(
        tx,
        { scopeId: ana, category: 'fact', content: 'Ana lives in Porto', confidence: 0.9 },
        { by: 'owner', now: new Date(Date.now() - 30 * DAY) },
      ),
    );
    await h.core.embeddingWorker.drain();
  }, TIMEOUT);
  afterAll(async () => {
    await h?.close();
    await model?.stop();
  });

  it(
    'a contradiction found while sleeping: the soul states one side, the digest asks, a press supersedes the other side, audited',
    async () => {
      const prisma = h.core.db.prisma;
      await converse(h.fake, ANA, 'I moved from Porto to Lisbon last month');
      const [slept] = await converse(h.fake, ANA, '/sleep');
      expect(slept).toMatch(/^Done: /);
      const porto = await prisma.memory.findFirstOrThrow({ where: { scopeId: ana, content: 'Ana lives in Porto' } });
      const lisbon = await prisma.memory.findFirstOrThrow({ where: { scopeId: ana, content: 'Ana lives in Lisbon' } });
      expect([porto.active, lisbon.active, porto.validTo, lisbon.validTo]).toEqual([true, true, null, null]);

      // The soul states only the side most likely current (both stated: the newer one).
      const soul = (await prisma.profile.findUniqueOrThrow({ where: { scopeId: ana } })).soul;
      expect(soul).toContain('Ana lives in Lisbon');
      expect(soul).not.toContain('Porto');

      // The digest asks which is true, with one button per side carrying a memory id, never text.
      const [digest] = await converse(h.fake, ANA, '/digest');
      expect(digest).toContain('Which is true?');
      const sent = h.fake.sent(ANA.id).at(-1)!;
      const keys = buttons(sent);
      expect(keys.map((k) => k.data).sort()).toEqual([`kp:${lisbon.id}`, `kp:${porto.id}`].sort());
      for (const k of keys) expect(Buffer.byteLength(k.data)).toBeLessThanOrEqual(64);
      const lisbonKey = keys.find((k) => k.data === `kp:${lisbon.id}`)!;
      const n = Number(/^(\d+) is true$/.exec(lisbonKey.text)?.[1]);
      expect(digest).toMatch(new RegExp(`${n}\\. Ana lives in Lisbon \\(you told me on \\d{4}-\\d\\d-\\d\\d; newer\\)`));

      const edits = sent.edits;
      const before = h.fake.sent(ANA.id).length;
      h.fake.press(ANA, sent, lisbonKey.data);
      await h.fake.waitFor(() => sent.edits > edits && h.fake.sent(ANA.id).length > before, 10_000, 'the answer to the press');
      expect(h.fake.sent(ANA.id).at(-1)!.text).toBe('Noted: “Ana lives in Lisbon” is what I keep. I set aside as no longer true:\n• Ana lives in Porto');
      expect(buttons(sent)).toEqual([]);
      expect(await prisma.memory.findUniqueOrThrow({ where: { id: porto.id } })).toMatchObject({ active: false, supersededById: lisbon.id });
      expect((await prisma.memory.findUniqueOrThrow({ where: { id: porto.id } })).validTo).toBeInstanceOf(Date);
      expect(await prisma.memory.findUniqueOrThrow({ where: { id: lisbon.id } })).toMatchObject({ active: true, validTo: null });
      const audit = await prisma.auditEvent.findFirstOrThrow({ where: { scopeId: ana, action: 'resolve', subjectId: porto.id } });
      expect(audit.reason).toBe('the owner said which is true with /keep in Telegram');
      expect(audit.after).toMatchObject({ resolvedInFavourOf: lisbon.id });
      expect((await prisma.profile.findUniqueOrThrow({ where: { scopeId: ana } })).soul).not.toContain('Porto');
      // A second press of a settled question changes nothing.
      h.fake.press(ANA, sent, `kp:${porto.id}`);
      await h.fake.waitFor(() => /not in an open conflict/.test(h.fake.sent(ANA.id).at(-1)!.text ?? ''), 10_000, 'the answer to a stale press');
      expect(await prisma.memory.findUniqueOrThrow({ where: { id: lisbon.id } })).toMatchObject({ active: true, validTo: null });
    },
    TIMEOUT,
  );

  it(
    'a restatement of one side settles the conflict in its favour',
    async () => {
      const prisma = h.core.db.prisma;
      const then = new Date(Date.now() - 10 * DAY);
      const { aquarium, library } = await prisma.$transaction(async (tx) => {
        const aquarium = await createMemory(
          tx,
          { scopeId: ana, category: 'fact', content: 'Ana works at the aquarium', confidence: 0.9 },
          { by: 'owner', now: then },
        );
        const library = await createMemory(
          tx,
          { scopeId: ana, category: 'fact', content: 'Ana works at the city library', confidence: 0.7, notRestating: aquarium.id },
          { by: 'owner', now: new Date(then.getTime() + DAY) },
        );
        await contradictMemory(tx, ana, aquarium.id, library.id, { now: new Date(then.getTime() + DAY), reason: 'a new job?' });
        return { aquarium, library };
      });
      await h.core.embeddingWorker.drain();
      await converse(h.fake, ANA, 'I still work at the aquarium, the library was a one-off');
      const [slept] = await converse(h.fake, ANA, '/sleep');
      expect(slept).toMatch(/^Done: /);
      expect(await prisma.memory.findUniqueOrThrow({ where: { id: library.id } })).toMatchObject({ active: false, supersededById: aquarium.id });
      expect(await prisma.memory.findUniqueOrThrow({ where: { id: aquarium.id } })).toMatchObject({ active: true, validTo: null });
      const audit = await prisma.auditEvent.findFirstOrThrow({ where: { scopeId: ana, action: 'resolve', subjectId: library.id } });
      expect(audit.reason).toMatch(/^said again/);
    },
    TIMEOUT,
  );
});

describe('contradictions in the terminal', () => {
  it(
    'the request to the model shows both sides annotated; /keep N supersedes the other side, audited',
    async () => {
      const model = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'You told me Lisbon most recently.' }) });
      try {
        const dataDir = path.join(tempDir('nocturne-conflicts-'), 'data');
        const env = { DATA_DIR: dataDir, TZ: 'UTC', LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-conflicts-000000', ANTHROPIC_BASE_URL: model.url };
        // The conflict as consolidation leaves it: the older side contradicted by a newer statement.
        const core = await createCore(loadConfig({ env, envFile: false }), memoryLogger().logger);
        let n: number;
        let ids: { porto: string; lisbon: string };
        try {
          const scope = await core.directory.ensure({ key: 'terminal:ana', channel: 'terminal', kind: 'private' });
          const old = new Date(Date.now() - 40 * DAY);
          const recent = new Date(Date.now() - 3 * DAY);
          ids = await core.db.prisma.$transaction(async (tx) => {
            const porto = await createMemory(
              tx,
              { scopeId: scope.id, category: 'fact', content: 'Ana lives in Porto', confidence: 0.9 },
              { by: 'owner', now: old },
            );
            const lisbon = await createMemory(
              tx,
              { scopeId: scope.id, category: 'fact', content: 'Ana lives in Lisbon', confidence: 0.7, notRestating: porto.id },
              { by: 'owner', now: recent },
            );
            await contradictMemory(tx, scope.id, porto.id, lisbon.id, { now: recent, reason: 'she moved?' });
            return { porto: porto.id, lisbon: lisbon.id };
          });
          const now = new Date();
          const digest = await buildDigest(core.db.prisma, scope.id, { periodEnd: now, now });
          await markSent(core.db.prisma, digest.id, now);
          const items = digest.items as Array<{ n: number; memoryId: string; action: string }>;
          n = items.find((i) => i.action === 'conflict' && i.memoryId === ids.lisbon)?.n ?? -1;
          expect(digest.content).toContain('Which is true?');
          expect(digest.content).toContain('/keep');
        } finally {
          await core.close();
        }
        expect(n).toBeGreaterThan(0);

        const result = await runTs(
          'src/cli/index.ts',
          ['chat', '--scope', 'terminal:ana', '--name', 'Ana'],
          cleanEnv(env),
          undefined,
          `Do I live in Porto or in Lisbon?\n/keep ${n}\n/quit\n`,
        );
        expect(result.code).toBe(0);
        const asked = model.requests.find((r) => r.messages.some((m) => m.text.includes('Porto or in Lisbon')));
        const system = asked?.system ?? '';
        expect(system).toMatch(
          /Ana lives in Porto \[conflict, unresolved: stated \d{4}-\d\d-\d\d; conflicts with “Ana lives in Lisbon” \(stated \d{4}-\d\d-\d\d, newer\); that one is likely current/,
        );
        expect(system).toMatch(
          /Ana lives in Lisbon \[conflict, unresolved: stated \d{4}-\d\d-\d\d; conflicts with “Ana lives in Porto” \(stated \d{4}-\d\d-\d\d\); this one is likely current \(newer\)/,
        );
        expect(result.stdout).toContain('Noted: “Ana lives in Lisbon” is what I keep. I set aside as no longer true:\n• Ana lives in Porto');

        const after = await createCore(loadConfig({ env, envFile: false }), memoryLogger().logger);
        try {
          expect(await after.db.prisma.memory.findUniqueOrThrow({ where: { id: ids!.porto } })).toMatchObject({ active: false, supersededById: ids!.lisbon });
          const audit = await after.db.prisma.auditEvent.findFirstOrThrow({ where: { action: 'resolve', subjectId: ids!.porto } });
          expect(audit.reason).toBe('the owner said which is true with /keep in the terminal');
          expect((await after.db.prisma.profile.findUnique({ where: { scopeId: audit.scopeId } }))?.soul ?? '').not.toContain('Porto');
        } finally {
          await after.close();
        }
      } finally {
        await model.stop();
      }
    },
    TIMEOUT,
  );
});
