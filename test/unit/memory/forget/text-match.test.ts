/**
 * What counts as holding forgotten text: every word for forgetting by words; most of a memory's
 * distinctive words, or a phrase of it, for forgetting one memory.
 */
import { describe, expect, it } from '@jest/globals';
import { holdsAll, quotes } from '../../../../src/memory/forget/text-match';

describe('text-match', () => {
  it('holds the words when every one is there as a whole word (plurals allowed)', () => {
    expect(holdsAll('Two dogs and a cat', ['dog', 'cat'])).toBe(true);
    expect(holdsAll('A dogma about cats', ['dog', 'cat'])).toBe(false);
    expect(holdsAll('anything', [])).toBe(false);
  });

  it('folds accents and stems as the full-text search does', () => {
    expect(holdsAll("Mercè, Jordi's mother", ['merce'])).toBe(true);
    expect(holdsAll('We keep travelling to the islands', ['travel', 'island'])).toBe(true);
    expect(holdsAll('A mercenary came by', ['merce'])).toBe(false);
  });

  it('quotes a memory with most of its distinctive words or one of its phrases, not for a shared name', () => {
    const memory = 'Ana drinks black coffee every morning';
    expect(quotes('Your usual black coffee, and maybe some toast.', memory)).toBe(true);
    expect(quotes('Ana, you drink it every morning: coffee!', memory)).toBe(true);
    expect(quotes('Have a lovely weekend with Hannah!', memory)).toBe(false);
    expect(quotes('Good morning Ana, any plans?', memory)).toBe(false);
    expect(quotes('Coffee shops close early on Sundays; black ink is on sale.', memory)).toBe(false);
  });
});
