/** Splitting replies at Telegram's limit on the boundaries a reader would choose. */
import { describe, expect, it } from '@jest/globals';
import { splitText, TELEGRAM_TEXT_LIMIT } from '../../../src/channels/split-text';

describe('splitText', () => {
  it('leaves a short text alone and drops an empty one', () => {
    expect(splitText('hello')).toEqual(['hello']);
    expect(splitText('   \n ')).toEqual([]);
    expect(TELEGRAM_TEXT_LIMIT).toBe(4096);
  });

  it('cuts at paragraphs first, then lines, then sentences, then words', () => {
    expect(splitText('aaaa bbbb\n\ncccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitText('aaaa bbbb\ncccc dddd', 12)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitText('Aaa bb. Ccc dd. Eee ff.', 16)).toEqual(['Aaa bb. Ccc dd.', 'Eee ff.']);
    expect(splitText('one two three four five', 10)).toEqual(['one two', 'three four', 'five']);
  });

  it('cuts a word longer than the limit, never inside a surrogate pair', () => {
    expect(splitText('x'.repeat(25), 10)).toEqual(['x'.repeat(10), 'x'.repeat(10), 'x'.repeat(5)]);
    const parts = splitText(`a${'😀'.repeat(10)}`, 4);
    expect(parts.join('')).toBe(`a${'😀'.repeat(10)}`);
    for (const part of parts) expect(part.isWellFormed()).toBe(true);
  });

  it('keeps every part within the limit and loses no words', () => {
    const text = Array.from({ length: 400 }, (_, i) => `Sentence ${i} has some words in it.${i % 7 === 0 ? '\n\n' : ' '}`).join('');
    const parts = splitText(text, 500);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(500);
    expect(parts.join(' ').split(/\s+/)).toEqual(text.trim().split(/\s+/));
  });
});
