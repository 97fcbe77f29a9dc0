/**
 * What a query's vector is made from: its content words (the words the full-text index keeps),
 * so the form every question shares ("what ... does ... in?") does not pull its vector towards
 * other questions instead of the turns that answer it.
 */
import { describe, expect, it } from '@jest/globals';
import { embeddingText } from '../../../../src/memory/retrieval/hybrid-search';

describe('embeddingText', () => {
  it("keeps a question's content words, lower-cased, in order, without punctuation", () => {
    expect(embeddingText('What activities does Melanie partake in?')).toBe('activities melanie partake');
    expect(embeddingText('Would Caroline likely have Dr. Seuss books on her bookshelf?')).toBe('caroline likely dr seuss books bookshelf');
  });

  it('keeps a query made of function words only as it is read, not empty', () => {
    expect(embeddingText('Why not?')).toBe('why not');
  });

  it('falls back to the text itself when it has no words at all', () => {
    expect(embeddingText('...')).toBe('...');
  });
});
