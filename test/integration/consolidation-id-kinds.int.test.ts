/**
 * Issue 15, through the real consolidation pipeline (real SQLite store, the real Anthropic SDK
 * against the loopback Messages API): memories and episodes are named with ids of distinct kinds
 * (`M1`, `E1`). Both counts start at 1, and an episode number written where a memory's belongs
 * used to edit the memory that happened to share it. Now such an operation is refused, logged
 * and reported; the rest of the answer applies. The prompt carries a filled-in example.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { uuidv7 } from '../../src/shared/ids';
import type { SleepJobContext } from '../../src/sleep/sleep-jobs';
import { WORKED_EXAMPLE } from '../../src/sleep/consolidation/prompt';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { ScriptedLlmReply } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const HOUR = 3_600_000;

/** The ids of the consolidation prompt as a model reads them: `E3 <date> <time> user (Ana): text`, `M2 [meta] content`. */
function readPrompt(prompt: string): { episodes: Array<{ id: string; text: string }>; memories: Array<{ id: string; content: string }> } {
  return {
    episodes: [...prompt.matchAll(/^(E\d+) \S+ \S+ user[^:]*: (.*)$/gm)].map((m) => ({ id: m[1]!, text: m[2]! })),
    memories: [...prompt.matchAll(/^(M\d+) \[[^\]]*\] (.*)$/gm)].map((m) => ({ id: m[1]!, content: m[2]! })),
  };
}

type Mode = 'episode-as-memory' | 'proper';

describe('consolidation: memory and episode ids of distinct kinds (issue 15)', () => {
  let core: Core;
  let llm: AnthropicDouble;
  let logs: ReturnType<typeof memoryLogger>;
  let mode: Mode = 'proper';
  let turn = 0;

  /**
   * The model learns the move to Porto as an update of the "lives in" memory and confirms the tea
   * habit. In `episode-as-memory` mode it makes issue 15's mistake: the update names the Porto
   * episode's id where the memory's belongs.
   */
  function model(request: { system?: string; messages: readonly { text: string }[] }): ScriptedLlmReply | undefined {
    if (!request.system?.includes('memory consolidation system')) return undefined;
    const { episodes, memories } = readPrompt(request.messages[0]!.text);
    const porto = episodes.find((e) => /Porto/.test(e.text))!;
    const tea = episodes.find((e) => /green tea/.test(e.text))!;
    const lives = memories.find((m) => /lives in Lisbon/.test(m.content))!;
    const likesTea = memories.find((m) => /green tea/.test(m.content))!;
    return {
      kind: 'text',
      text: JSON.stringify({
        new: [{ category: 'fact', content: 'The user has a flat in Porto', confidence: 0.9, source: 'stated', importance: 0.6, episodes: [porto.id] }],
        reinforce: [{ memory: likesTea.id, episodes: [tea.id], reason: 'green tea again' }],
        update: [{ memory: mode === 'episode-as-memory' ? porto.id : lives.id, content: 'The user lives in Porto', episodes: [porto.id], reason: 'moved' }],
      }),
    };
  }

  /** A scope with two memories (shown as M1 and M2) and two messages of the person (E1 and E2). */
  async function scopeWith(key: string, at: Date): Promise<string> {
    await core.episodeService.ingestMany(
      { key, channel: 'telegram' },
      ['We moved to Porto last month, the new flat is lovely', 'I had green tea again this morning, as always'].map((content, i) =>
        core.episodeService.normalize(
          {
            role: 'user',
            content,
            author: 'Ana',
            conversationId: `${key}-c`,
            externalId: `t${turn++}`,
            timestamp: new Date(at.getTime() + i * 60_000).toISOString(),
          },
          'telegram',
        ),
      ),
    );
    const scopeId = (await core.scopes.findByKey(key))!.id;
    for (const content of ['The user lives in Lisbon', 'The user drinks green tea every morning']) {
      await core.memoryStore.remember({ scopeId, category: 'fact', content, confidence: 0.9 }, { now: new Date(at.getTime() - HOUR), by: 'owner' });
    }
    await core.embeddingWorker.drain();
    return scopeId;
  }

  function night(now: Date): SleepJobContext {
    return { now, runId: uuidv7(), shouldContinue: () => true, tokenBudgetLeft: Number.POSITIVE_INFINITY };
  }

  const current = (scopeId: string) => core.db.prisma.memory.findMany({ where: { scopeId, validTo: null }, orderBy: { createdAt: 'asc' } });

  beforeAll(async () => {
    llm = await startAnthropicDouble({ responder: (seen) => model(seen) });
    logs = memoryLogger();
    const config = loadConfig({
      env: { DATA_DIR: tempDir(), LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-idkinds-000000', ANTHROPIC_BASE_URL: llm.url },
      envFile: false,
    });
    core = await createCore(config, logs.logger, { embedder: createHashEmbedder({ dimension: 256 }) });
  });
  afterAll(async () => {
    await core?.close();
    await llm?.stop();
  });

  it('the prompt names memories M1.. and episodes E1.., and carries a filled-in example citing both kinds', async () => {
    const base = new Date(Date.now() + HOUR);
    const scopeId = await scopeWith('telegram:private:1501', base);
    mode = 'proper';
    await core.sleep.planNextBatch(scopeId, { now: new Date(base.getTime() + HOUR), runId: uuidv7() });
    const request = llm.requests.filter((r) => r.system?.includes('memory consolidation system')).at(-1)!;
    const prompt = request.messages[0]!.text;
    const { episodes, memories } = readPrompt(prompt);
    expect(episodes.map((e) => e.id)).toEqual(['E1', 'E2']);
    expect(memories.map((m) => m.id).sort()).toEqual(['M1', 'M2']);
    // No line numbered the old way, `(1)` for a memory or `[1]` for an episode.
    expect(prompt).not.toMatch(/^[([]\d+[)\]] /m);
    // The worked example: real values, an M-id where a memory belongs and E-ids where episodes do.
    expect(request.system).toContain(WORKED_EXAMPLE);
    const example = JSON.parse(/a good answer is:\n([\s\S]*?)\n\(/.exec(request.system!)![1]!) as {
      new: Array<{ episodes: string[] }>;
      reinforce: Array<{ memory: string; episodes: string[] }>;
    };
    expect(example.new[0]!.episodes).toEqual(['E2']);
    expect(example.reinforce[0]).toMatchObject({ memory: 'M1', episodes: ['E1'] });
    // No pseudo-JSON template with placeholders for the model to copy.
    expect(request.system).not.toMatch(/memory number|episode numbers|:\s*"\.\.\."|0\.0-1\.0/);
  });

  it('an episode id written as a memory is refused and logged; the memory with that number is untouched; the rest applies', async () => {
    const base = new Date(Date.now() + 2 * HOUR);
    const scopeId = await scopeWith('telegram:private:1502', base);
    const before = await current(scopeId);
    mode = 'episode-as-memory';
    const ctx = night(new Date(base.getTime() + HOUR));
    const report = await core.sleep.consolidateScope(scopeId, ctx);
    expect(report.outcome.status).toBe('succeeded');

    const prompt = llm.requests.filter((r) => r.system?.includes('memory consolidation system')).at(-1)!.messages[0]!.text;
    const { episodes, memories } = readPrompt(prompt);
    const porto = episodes.find((e) => /Porto/.test(e.text))!;
    // The memory whose number the misplaced episode id shares (E1 -> M1): what the old bare numbers edited.
    const sameNumber = memories.find((m) => m.id === `M${porto.id.slice(1)}`)!;
    expect(sameNumber).toBeDefined();

    // Refused with its reason, in the run's report...
    expect(report.rejected).toEqual([
      expect.stringMatching(new RegExp(`^update: names ${porto.id} as its memory, but E-ids name episodes and memories are M-ids`)),
    ]);
    // ...and logged as a warning with the scope and the operation.
    const warned = logs
      .lines()
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.level === 'warn' && l.message === 'rejected a consolidation operation' && l.scopeId === scopeId);
    expect(warned).toEqual([
      expect.objectContaining({ operation: 'update', runId: ctx.runId, reason: expect.stringContaining(`names ${porto.id} as its memory`) }),
    ]);

    // No memory was edited: the one sharing the number keeps its content, and nothing was superseded.
    const after = await current(scopeId);
    const kept = after.find((m) => m.content === sameNumber.content)!;
    expect(kept).toBeDefined();
    expect(before.map((m) => m.id)).toEqual(after.filter((m) => before.some((b) => b.id === m.id)).map((m) => m.id));
    expect(after.map((m) => m.content)).not.toContain('The user lives in Porto');
    expect(await core.db.prisma.memory.count({ where: { scopeId, validTo: { not: null } } })).toBe(0);
    expect(await core.db.prisma.auditEvent.count({ where: { scopeId, runId: ctx.runId, action: { in: ['update', 'supersede'] } } })).toBe(0);
    // What the answer named properly applied: the tea habit confirmed, the flat learned.
    expect(after.find((m) => m.content === 'The user drinks green tea every morning')!.reinforcementCount).toBe(2);
    expect(after.map((m) => m.content)).toContain('The user has a flat in Porto');
    expect(await core.db.prisma.episode.count({ where: { scopeId, consolidated: false } })).toBe(0);
  });

  it('the same answer with the memory\u2019s own M-id updates it', async () => {
    const base = new Date(Date.now() + 3 * HOUR);
    const scopeId = await scopeWith('telegram:private:1503', base);
    mode = 'proper';
    const report = await core.sleep.consolidateScope(scopeId, night(new Date(base.getTime() + HOUR)));
    expect(report.outcome.status).toBe('succeeded');
    expect(report.rejected).toEqual([]);
    const contents = (await current(scopeId)).map((m) => m.content).sort();
    expect(contents).toEqual(['The user drinks green tea every morning', 'The user has a flat in Porto', 'The user lives in Porto']);
    const old = await core.db.prisma.memory.findFirstOrThrow({ where: { scopeId, content: 'The user lives in Lisbon' } });
    expect(old.validTo).not.toBeNull();
  });
});
