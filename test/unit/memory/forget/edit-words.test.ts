/** What an edit takes back: the words of the old text the new one no longer has, read as search reads words. */
import { describe, expect, it } from '@jest/globals';
import { holdsAnyOf, removedTerms } from '../../../../src/memory/forget/edit-episode';
import { contextPrefix, REPLY_QUOTE_CHARS } from '../../../../src/memory/episodes/message-context';

describe('removedTerms', () => {
  it('lists only the words the new text dropped, stemmed as search reads them', () => {
    expect(removedTerms('My cat is called Zorblat', 'My cat is called Quimby')).toEqual(['zorblat']);
    // A plural kept as a singular is the same word; a stopword is never "taken back".
    expect(removedTerms('I walk the dogs in the park', 'I walk the dog')).toEqual(['park']);
    expect(removedTerms('the same words', 'The same   words')).toEqual([]);
  });

  it('matches a text holding any one of them, whole words only', () => {
    const holds = holdsAnyOf(['zorblat', 'park']);
    expect(holds('Zorblat sleeps')).toBe(true);
    expect(holds('a spark plug')).toBe(false);
    expect(holdsAnyOf([])('anything')).toBe(false);
  });
});

describe('contextPrefix', () => {
  it('says who wrote a forward first and quotes what a reply answers, cut to a line', () => {
    expect(contextPrefix({ forwardedFrom: 'Bea' })).toBe('(forwarded from Bea) ');
    expect(contextPrefix({ replyTo: '1:2', replyToText: 'Shall we\nmeet?' })).toBe('(in reply to: "Shall we meet?") ');
    expect(contextPrefix({ replyTo: '1:2' })).toBe('(in reply to an earlier message) ');
    expect(contextPrefix({})).toBe('');
    const long = contextPrefix({ replyToText: 'x'.repeat(REPLY_QUOTE_CHARS + 50) });
    expect(long.length).toBeLessThan(REPLY_QUOTE_CHARS + 25);
  });
});
