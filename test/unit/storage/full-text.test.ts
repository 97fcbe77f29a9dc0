import { describe, expect, it } from '@jest/globals';
import { chooseTerms, queryTerms } from '../../../src/storage/full-text';

describe('chooseTerms (which query words the full-text index scores)', () => {
  const words = ['melanie', 'painted', 'sunset', 'lake', 'friday', 'canvas', 'colours'];

  it('keeps every word of a small store, in the query order', () => {
    expect(chooseTerms(words.slice(0, 4), [300, 40, 12, 25], 2_760)).toEqual(['melanie', 'painted', 'sunset', 'lake']);
  });

  it('keeps the six rarest words of a long query', () => {
    expect(chooseTerms(words, [300, 40, 12, 25, 500, 7, 90], 2_760)).toEqual(['melanie', 'painted', 'sunset', 'lake', 'canvas', 'colours']);
  });

  it('leaves out a word that most rows hold, but never every word', () => {
    // 2,000 rows and one row in 20 of 211,500 (10,575): a word above both is left out.
    expect(chooseTerms(['melanie', 'painted'], [10_600, 900], 211_500)).toEqual(['painted']);
    expect(chooseTerms(['melanie', 'painted'], [1_999, 900], 2_760)).toEqual(['melanie', 'painted']);
    expect(chooseTerms(['melanie', 'went'], [12_000, 11_000], 211_500)).toEqual(['went']);
  });

  it('stops adding words once their rows together would pass 3,000, rarest first', () => {
    // 1,200 + 1,500 = 2,700 rows; adding 2,100 more would pass 3,000, and so would 4,000.
    expect(chooseTerms(['melanie', 'painted', 'sunset', 'lake'], [4_000, 2_100, 1_200, 1_500], 211_500)).toEqual(['sunset', 'lake']);
    expect(chooseTerms(['melanie', 'painted', 'sunset'], [1_000, 1_200, 800], 211_500)).toEqual(['melanie', 'painted', 'sunset']);
  });

  it('keeps the rarest word alone when it passes the budget by itself', () => {
    expect(chooseTerms(['melanie', 'painted'], [8_208, 7_181], 211_500)).toEqual(['painted']);
  });

  it('reads words from the query without its stopwords', () => {
    expect(queryTerms('What has Melanie painted?')).toEqual(['melanie', 'painted']);
    expect(chooseTerms([], [], 100)).toEqual([]);
  });
});
