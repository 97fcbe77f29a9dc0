/**
 * The words of a document a person sent: plain text and Markdown as they are (UTF-8), PDF through
 * unpdf (pdf.js packaged for servers, MIT, no native parts; it installs from the npm registry and
 * runs on Node 20). Anything else, and anything past the limits, is refused with a reason the
 * person can read; nothing partial is kept.
 *
 * The text is then cut into parts of about {@link PART_CHARS} characters at paragraph, line,
 * sentence or word ends, each stored as one episode: small enough to be found by search and
 * shown to the model as context, large enough to keep a thought together.
 */
import { extractText, getDocumentProxy, getResolvedPDFJS } from 'unpdf';

/** What kind of document a file is, from its MIME type or its name. */
export type DocumentKind = 'text' | 'markdown' | 'pdf';

/** Why a document was not read; each has its own reply (media-replies.ts). */
export type DocumentRefusal =
  | { readonly reason: 'unsupported' }
  | { readonly reason: 'no_text' }
  | { readonly reason: 'unreadable' }
  | { readonly reason: 'too_many_pages'; readonly pages: number; readonly maxPages: number }
  | { readonly reason: 'too_long'; readonly parts: number; readonly maxParts: number };

export type DocumentText =
  | { readonly ok: true; readonly kind: DocumentKind; readonly parts: readonly string[]; readonly pages?: number }
  | ({ readonly ok: false } & DocumentRefusal);

/** About how long one stored part is, in characters. */
export const PART_CHARS = 1_500;

const TEXT_TYPES = new Set(['text/plain']);
const MARKDOWN_TYPES = new Set(['text/markdown', 'text/x-markdown']);

/** The kind of a document from its MIME type, else its file name; undefined when it is none we read. */
export function documentKind(mime: string | undefined, name: string | undefined): DocumentKind | undefined {
  const type = mime?.toLowerCase().split(';')[0]?.trim();
  const extension = /\.([a-z0-9]+)$/i.exec(name ?? '')?.[1]?.toLowerCase();
  if (type === 'application/pdf' || extension === 'pdf') return 'pdf';
  if ((type && MARKDOWN_TYPES.has(type)) || extension === 'md' || extension === 'markdown') return 'markdown';
  if ((type && TEXT_TYPES.has(type)) || extension === 'txt' || extension === 'text') return 'text';
  return undefined;
}

/** Where to end a part within `window`: the last paragraph, line, sentence or word end past its middle. */
function cutPoint(window: string): number {
  const middle = window.length / 2;
  const paragraph = window.lastIndexOf('\n\n');
  if (paragraph > middle) return paragraph;
  const line = window.lastIndexOf('\n');
  if (line > middle) return line;
  const sentence = Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '));
  if (sentence > middle) return sentence + 1;
  const word = window.lastIndexOf(' ');
  return word > middle ? word : window.length;
}

/** Cuts `text` into parts of at most `size` characters, at the latest paragraph, line, sentence or word end. */
export function splitIntoParts(text: string, size: number = PART_CHARS): string[] {
  const parts: string[] = [];
  let rest = text.replace(/\r\n?/g, '\n').trim();
  while (rest.length > size) {
    const cut = cutPoint(rest.slice(0, size));
    parts.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest !== '') parts.push(rest);
  return parts.filter((part) => part !== '');
}

/** Text of a PDF, page by page; refuses one past `maxPages` before reading its text. */
async function pdfText(bytes: Buffer, maxPages: number): Promise<{ ok: true; text: string; pages: number } | ({ ok: false } & DocumentRefusal)> {
  // pdf.js failing to load is our failure, not the file's: it goes to the error boundary.
  await getResolvedPDFJS();
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes));
  } catch {
    return { ok: false, reason: 'unreadable' };
  }
  try {
    if (pdf.numPages > maxPages) return { ok: false, reason: 'too_many_pages', pages: pdf.numPages, maxPages };
    const { text } = await extractText(pdf, { mergePages: false });
    return { ok: true, text: text.map((page) => page.trim()).join('\n\n'), pages: pdf.numPages };
  } catch {
    return { ok: false, reason: 'unreadable' };
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}

/** Plain text of UTF-8 bytes (a byte-order mark dropped); null when the bytes are not UTF-8 text. */
function utf8Text(bytes: Buffer): string | null {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
    // NUL bytes mean a binary file that happens to decode.
    return text.includes('\u0000') ? null : text;
  } catch {
    return null;
  }
}

/** Reads a document into parts, or says why it cannot be. */
export async function readDocument(bytes: Buffer, kind: DocumentKind, limits: { readonly maxPages: number; readonly maxParts: number }): Promise<DocumentText> {
  let text: string;
  let pages: number | undefined;
  if (kind === 'pdf') {
    const read = await pdfText(bytes, limits.maxPages);
    if (!read.ok) return read;
    text = read.text;
    pages = read.pages;
  } else {
    const decoded = utf8Text(bytes);
    if (decoded === null) return { ok: false, reason: 'unreadable' };
    text = decoded;
  }
  const parts = splitIntoParts(text);
  if (parts.length === 0) return { ok: false, reason: 'no_text' };
  if (parts.length > limits.maxParts) return { ok: false, reason: 'too_long', parts: parts.length, maxParts: limits.maxParts };
  return { ok: true, kind, parts, ...(pages !== undefined && { pages }) };
}
