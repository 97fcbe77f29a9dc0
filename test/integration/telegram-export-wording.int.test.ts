/**
 * What a person reads about their export on Telegram (real grammY against the loopback Bot API,
 * real SQLite): the caption counts the memories `/memories` lists, not every version the file
 * keeps ("9 memories" above a list of 8), and neither the caption nor the Markdown file speaks of
 * "scopes". Memories are written through the domain's write path, as consolidation writes them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { ANA, converse, startHarness, type Harness } from './telegram-harness';

const CURRENT = 8;

describe('Telegram export wording', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await converse(h.fake, ANA, 'hello, I keep bees on the roof');
    const ana = (await h.core.db.prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } })).id;
    const now = new Date();
    await h.core.db.prisma.$transaction(async (tx) => {
      const ids: string[] = [];
      for (let i = 1; i <= CURRENT; i++) {
        const m = await createMemory(
          tx,
          { scopeId: ana, category: 'fact', content: `Ana keeps beehive number ${i} on the roof`, confidence: 0.9 },
          { by: 'owner', now },
        );
        ids.push(m.id);
      }
      // A correction: the old version stays in the file as history, the list shows the new one.
      await supersedeMemory(tx, ana, ids[0]!, { content: 'Ana keeps beehive number 1 in the garden' }, { now, reason: 'moved it', by: 'owner' });
    });
  });
  afterAll(async () => h?.close());

  it('the caption counts what /memories lists; the file keeps the history and says so', async () => {
    const list = (await converse(h.fake, ANA, '/memories')).join('\n');
    const listed = Number(/ of (\d+) \(page/.exec(list)?.[1]);
    const before = h.fake.sent(ANA.id).length;
    h.fake.message(ANA, '/export');
    await h.fake.waitFor(() => h.fake.sent(ANA.id).length >= before + 2, 15_000, 'the two export files');
    const [json, markdown] = h.fake.sent(ANA.id).slice(before);
    const caption = json!.caption ?? '';
    const captionCount = Number(/\((\d+) memories/.exec(caption)?.[1]);
    const exported = (JSON.parse(json!.document!.content.toString('utf8')) as { memories: unknown[] }).memories.length;
    const md = markdown!.document!.content.toString('utf8');
    process.stderr.write(`telegram-export-wording: listed ${listed}, caption ${JSON.stringify(caption)}, rows in the file ${exported}\n`);
    expect(listed).toBe(CURRENT);
    expect(exported).toBe(CURRENT + 1);
    expect(captionCount).toBe(listed);
    expect(caption).toContain(`${CURRENT} memories, 1 message, plus 1 kept as history`);
    expect(`${caption}\n${markdown!.caption ?? ''}\n${md}`).not.toMatch(/\bscope\b/i);
  }, 60_000);
});
