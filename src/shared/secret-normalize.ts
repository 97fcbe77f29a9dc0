/**
 * The form of a text that secret detection reads. A key hidden from a pattern by a character
 * nobody sees (a zero-width space after every fourth character) or by URL encoding
 * (`q%3Dsk-ant-…`, where `D` glued to `sk` hides the key's start) is still the key: detection runs on
 * the text with invisible format characters removed and percent escapes decoded, and what it finds
 * is mapped back to the original text, so the redaction covers the hidden characters too.
 */

/**
 * Characters that render as nothing and that a pasted key can carry without its owner noticing:
 * soft hyphen, zero-width space/non-joiner/joiner, word joiner, invisible operators, byte order mark.
 */
const INVISIBLE = /[\u00AD\u200B-\u200D\u2060-\u2064\uFEFF]/;
const SOFT_HYPHEN = 0xad;
const ZERO_WIDTH_FIRST = 0x200b;
const ZERO_WIDTH_LAST = 0x200d;
const WORD_JOINER_FIRST = 0x2060;
const WORD_JOINER_LAST = 0x2064;
const BYTE_ORDER_MARK = 0xfeff;
const PERCENT = 0x25;
const ESCAPE_LENGTH = 3;
const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;
const FIRST_PRINTABLE = 0x20;
const LAST_PRINTABLE = 0x7e;

/** A text as detection reads it, and where each of its characters came from. */
export interface NormalizedText {
  readonly text: string;
  /** `start[i]`: the index in the original text of the first character that produced `text[i]`. */
  readonly start: readonly number[];
  /** `end[i]`: the index just past the last original character that produced `text[i]`. */
  readonly end: readonly number[];
}

/** Whether `text` has anything {@link normalizeForSecrets} would change (most texts do not). */
export function needsNormalizing(text: string): boolean {
  return text.includes('%') || INVISIBLE.test(text);
}

function isInvisible(code: number): boolean {
  return (
    code === SOFT_HYPHEN ||
    code === BYTE_ORDER_MARK ||
    (code >= ZERO_WIDTH_FIRST && code <= ZERO_WIDTH_LAST) ||
    (code >= WORD_JOINER_FIRST && code <= WORD_JOINER_LAST)
  );
}

/** The character a printable percent escape at `at` stands for, or -1. */
function escapedCode(text: string, at: number): number {
  const hex = text.slice(at + 1, at + ESCAPE_LENGTH);
  if (text.charCodeAt(at) !== PERCENT || !HEX_PAIR.test(hex)) return -1;
  const code = parseInt(hex, 16);
  return code >= FIRST_PRINTABLE && code <= LAST_PRINTABLE ? code : -1;
}

/** `text` without invisible format characters and with printable percent escapes decoded. */
export function normalizeForSecrets(text: string): NormalizedText {
  const parts: string[] = [];
  const start: number[] = [];
  const end: number[] = [];
  let copyFrom = 0;
  for (let i = 0; i < text.length; ) {
    const code = text.charCodeAt(i);
    const escaped = code === PERCENT ? escapedCode(text, i) : -1;
    if (escaped < 0 && !isInvisible(code)) {
      start.push(i);
      end.push(i + 1);
      i += 1;
      continue;
    }
    parts.push(text.slice(copyFrom, i));
    if (escaped >= 0) {
      parts.push(String.fromCharCode(escaped));
      start.push(i);
      end.push(i + ESCAPE_LENGTH);
      i += ESCAPE_LENGTH;
    } else {
      i += 1;
    }
    copyFrom = i;
  }
  parts.push(text.slice(copyFrom));
  return { text: parts.join(''), start, end };
}

/** A span `[from, to)` of the normalized text as the span of the original text it came from. */
export function originalSpan(normalized: NormalizedText, from: number, to: number): [number, number] {
  if (to <= from) return [normalized.start[from] ?? 0, normalized.start[from] ?? 0];
  return [normalized.start[from] as number, normalized.end[to - 1] as number];
}
