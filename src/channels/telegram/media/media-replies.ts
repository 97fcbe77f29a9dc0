/**
 * What the bot says about media it cannot read, or has read: one place for the wording, so the
 * docs (docs/channels.md, "What becomes of each kind of message") and the tests quote the same
 * sentences.
 */
import type { DocumentRefusal } from './document-text';

/** A size in the unit people read: `1.5 MB`, `300 KB`. */
export function readableSize(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** Said once per chat (while the bot runs) when photos cannot be described. */
export const CANNOT_SEE_TEXT =
  'I cannot see pictures yet (my model does not take images), so of photos I keep only their captions. ' +
  'If a photo matters, tell me in words what it shows.';

/** Said once per chat (while the bot runs) when voice messages cannot be transcribed. */
export const VOICE_NOT_UNDERSTOOD_TEXT =
  'I cannot understand voice messages yet, so I only noted that you sent one and how long it was. Please type what matters.';

/** A file over MEDIA_MAX_FILE_MB. */
export function tooLargeText(what: string, size: number, maxBytes: number): string {
  return `${what} is ${readableSize(size)}, more than the ${readableSize(maxBytes)} I can read, so I did not read it. I only noted that you sent it.`;
}

/** A document that was read and stored. */
export function documentReadText(name: string, parts: number, pages: number | undefined): string {
  const length = pages === undefined ? '' : ` (${pages} page${pages === 1 ? '' : 's'})`;
  return (
    `I read \u201c${name}\u201d${length} into my memory as ${parts} part${parts === 1 ? '' : 's'}. ` +
    'Ask me about it any time; /forget and words from it removes them.'
  );
}

/** A document that was not read, and why. */
export function documentRefusedText(name: string, refusal: DocumentRefusal): string {
  const start = `I did not read \u201c${name}\u201d:`;
  switch (refusal.reason) {
    case 'unsupported':
      return `${start} I can read plain text (.txt), Markdown (.md) and PDF files only. I noted that you sent it.`;
    case 'no_text':
      return `${start} I found no text in it (a scanned PDF has only pictures of pages). I noted that you sent it.`;
    case 'unreadable':
      return `${start} the file looks damaged or is not what its name says. I noted that you sent it.`;
    case 'too_many_pages':
      return `${start} it has ${refusal.pages} pages, more than the ${refusal.maxPages} I read. I noted that you sent it.`;
    case 'too_long':
      return `${start} it is too long for me (${refusal.parts} parts of text, more than the ${refusal.maxParts} I keep). I noted that you sent it.`;
  }
}
