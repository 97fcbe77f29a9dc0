/**
 * The book of forget previews `memory_forget` confirms: a token opens only its own preview, in
 * its own scope, for its own target, once, within its time.
 */
import { describe, expect, it } from '@jest/globals';
import { createForgetPreviewBook, FORGET_PREVIEW_TTL_MS } from '../../../src/mcp/forget-previews';
import type { ForgetPreview } from '../../../src/memory/forget/forget-service';

/** A preview as the forget service returns it (its confirm is never called here). */
const preview = (id: string): ForgetPreview => ({
  terms: [],
  matches: [{ id, category: 'fact', content: id, confidence: 0.9, state: 'active' }],
  episodes: 0,
  counts: { memories: 1, messages: 0, summaries: 0, entities: 0, files: 0, reminders: 0 },
  confirm: () => Promise.reject(new Error('not in this test')),
});

describe('forget preview book', () => {
  it('gives back the preview for the same scope and target, once', () => {
    const book = createForgetPreviewBook();
    const shown = preview('m1');
    const token = book.hold('s1', { memoryId: 'm1' }, shown);
    expect(book.take('s1', { memoryId: 'm1' }, token)).toEqual({ preview: shown });
    expect(book.take('s1', { memoryId: 'm1' }, token)).toEqual({ refused: 'unknown' });
  });

  it('words match as trimmed; other words or a memory id are a mismatch, and spend the token', () => {
    const book = createForgetPreviewBook();
    const token = book.hold('s1', { words: 'green tea' }, preview('m1'));
    expect(book.take('s1', { words: 'black tea' }, token)).toEqual({ refused: 'mismatch' });
    expect(book.take('s1', { words: 'green tea' }, token)).toEqual({ refused: 'unknown' });
    const again = book.hold('s1', { words: 'green tea' }, preview('m1'));
    expect(book.take('s1', { memoryId: 'm1' }, again)).toEqual({ refused: 'mismatch' });
    const third = book.hold('s1', { words: 'green tea' }, preview('m1'));
    expect('preview' in book.take('s1', { words: '  green tea ' }, third)).toBe(true);
  });

  it("another scope's token reads as unknown and stays usable in its own scope", () => {
    const book = createForgetPreviewBook();
    const token = book.hold('bo', { memoryId: 'm9' }, preview('m9'));
    expect(book.take('ana', { memoryId: 'm9' }, token)).toEqual({ refused: 'unknown' });
    expect('preview' in book.take('bo', { memoryId: 'm9' }, token)).toBe(true);
  });

  it('expires after its time', () => {
    let now = 1_000_000;
    const book = createForgetPreviewBook(() => now);
    const token = book.hold('s1', { memoryId: 'm1' }, preview('m1'));
    now += FORGET_PREVIEW_TTL_MS + 1;
    expect(book.take('s1', { memoryId: 'm1' }, token)).toEqual({ refused: 'expired' });
  });
});
