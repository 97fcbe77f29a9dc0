/**
 * Splits a long reply into messages a channel accepts (Telegram: 4,096 characters), preferring
 * the boundaries a reader would choose: paragraphs, then lines, then sentences, then words; a
 * cut inside a word happens only when a single word is longer than the limit.
 */

/** Telegram's limit for one text message, in UTF-16 code units after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** Finer and finer places to cut; `keep` characters of the match stay with the first part (a sentence's full stop). */
const BOUNDARIES: ReadonlyArray<{ readonly pattern: RegExp; readonly keep: number }> = [
  { pattern: /\n\s*\n/g, keep: 0 },
  { pattern: /\n/g, keep: 0 },
  { pattern: /[.!?…]\s+/g, keep: 1 },
  { pattern: /\s+/g, keep: 0 },
];

/** The last boundary ending at or before `limit` in `text`, as the index where the next part starts. */
function cutPoint(text: string, limit: number): { end: number; next: number } {
  for (const { pattern, keep } of BOUNDARIES) {
    let best: { end: number; next: number } | undefined;
    const boundary = new RegExp(pattern);
    for (let match = boundary.exec(text); match; match = boundary.exec(text)) {
      const end = match.index + keep;
      if (end > limit) break;
      // A boundary in the first fifth would leave a tiny part: keep looking at finer ones.
      if (end >= limit / 5) best = { end, next: match.index + match[0].length };
    }
    if (best) return best;
  }
  // No boundary: cut at the limit, but never between the halves of a surrogate pair.
  const code = text.charCodeAt(limit - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
  return { end, next: end };
}

/**
 * Parts of `text`, each at most `limit` UTF-16 code units and none empty. Whitespace at a cut is
 * dropped; the text of each part is otherwise unchanged.
 */
export function splitText(text: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  if (limit < 2) throw new RangeError('the limit must be at least 2 characters');
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const { end, next } = cutPoint(rest, limit);
    const part = rest.slice(0, end).trimEnd();
    if (part.length > 0) parts.push(part);
    rest = rest.slice(next).trimStart();
  }
  if (rest.length > 0) parts.push(rest);
  return parts;
}
