import { describe, expect, it } from '@jest/globals';
import { DEFAULT_PACKING, groupEpisodes, packGroups, packingFor } from '../../../src/sleep/consolidation/grouping';
import type { Episode } from '../../../src/storage/prisma';

let n = 0;
function episode(minute: number, conversationId: string | null, content = 'hello there', channel = 'telegram'): Episode {
  n++;
  return {
    id: `e${String(n).padStart(4, '0')}`,
    scopeId: 's',
    channel,
    role: 'user',
    author: null,
    authorId: null,
    content,
    summary: null,
    timestamp: new Date(Date.UTC(2026, 0, 1) + minute * 60_000),
    conversationId,
    turn: conversationId ? minute : null,
    externalId: null,
    metadata: null,
    importance: 0.5,
    importanceSource: 'heuristic',
    consolidated: false,
    consolidationAttempts: 0,
    consolidatedAt: null,
    contentHash: 'h',
    embeddedWith: null,
    createdAt: new Date(),
  };
}

describe('consolidation grouping', () => {
  it('keeps a conversation together and splits loose episodes at a two-hour pause or a channel change', () => {
    const groups = groupEpisodes([
      episode(0, 'a'),
      episode(1, null),
      episode(2, 'a'),
      episode(3, null),
      episode(200, null),
      episode(201, null, 'x', 'webhook'),
      episode(5, 'a'),
    ]);
    expect(groups.map((g) => g.episodes.length)).toEqual([3, 2, 1, 1]);
    expect(groups[0]!.episodes.every((e) => e.conversationId === 'a')).toBe(true);
  });

  it('packs groups into as few prompts as the limits allow, splitting a group that is too big', () => {
    const groups = groupEpisodes([
      ...Array.from({ length: 70 }, (_, i) => episode(i, 'big')),
      ...Array.from({ length: 20 }, (_, i) => episode(100 + i, 'small')),
    ]);
    const prompts = packGroups(groups, { maxEpisodes: 60, maxChars: 1_000_000 });
    expect(prompts.map((p) => p.reduce((k, g) => k + g.episodes.length, 0))).toEqual([60, 30]);
    expect(prompts[1]![0]!.label).toMatch(/continued/);
    expect(packGroups(groups, DEFAULT_PACKING)).toHaveLength(1);
  });

  it('sizes prompts to the model: a whole batch for Claude, small prompts for an 8k Ollama model', () => {
    expect(packingFor(200_000, 4096)).toEqual(DEFAULT_PACKING);
    const small = packingFor(8_192, 4096);
    expect(small.maxChars).toBeLessThan(5_000);
    expect(small.maxChars).toBeGreaterThanOrEqual(2_000);
    const long = Array.from({ length: 30 }, (_, i) => episode(i, 'c', 'word '.repeat(100)));
    // 30 episodes of ~540 characters each (with the line prefix) in prompts of at most ~4,700.
    const prompts = packGroups(groupEpisodes(long), small);
    expect(prompts).toHaveLength(Math.ceil(30 / Math.floor(small.maxChars / 540)));
    expect(packGroups(groupEpisodes(long), DEFAULT_PACKING)).toHaveLength(1);
  });
});
