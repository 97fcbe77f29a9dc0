/**
 * The reading of a streamed import's first pass: the export file once, from its first byte to its
 * last, one array element at a time. Each element is captured (up to the most a row can take as
 * JSON), parsed, checked against its row schema and handed to its section's checks; a larger one
 * is measured and refused without being held. Every other top-level value is kept whole (they are
 * small: the scope and its profile) as the skeleton zod then checks in the document's place.
 */
import { ENCODED_LIMIT_RULE, contentSizeProblem, formatBytes, maxEncodedEpisodeBytes, type EpisodeLimits } from '../memory/episodes/episode-limits';
import { pathDeeperThan } from '../shared/json-depth';
import { MAX_DOCUMENT_DEPTH, episodeSizeIssues, pathText, unstorableTexts } from './import-validation';
import type { ByteReader } from './json-byte-cursor';
import { JsonScanner, type BoundedCapture } from './json-scanner';
import { rowSchemaOf } from './scope-document';
import { ROW_SECTIONS, type RowSection } from './stream-plan';
import { Issues, SectionState, checkRow } from './stream-sections';

/** What one reading of the file found, for the checks of the whole document. */
export interface ReadExport {
  /** The document with every array of rows empty (or a stand-in of the type of a non-object). */
  readonly document: unknown;
  /** The arrays of rows read, by name (a repeated key keeps the last, as JSON.parse does). */
  readonly sections: ReadonlyMap<RowSection, SectionState>;
  /** Values too large to store (or to hold): reported first, and alone. */
  readonly sizes: Issues;
  /** Where the document nests deeper than allowed, if it does. */
  readonly deep: ReadonlyArray<string | number> | null;
  /** `scope.id` of the document when it is a string (what the admin API checks first). */
  readonly scopeId: string | undefined;
}

/** True for the name of an array of rows. */
export const isRowSection = (key: string): key is RowSection => (ROW_SECTIONS as readonly string[]).includes(key);

/** A value of the same JSON type as the one starting with `byte` (zod's message names only the type). */
function standIn(byte: number): unknown {
  if (byte === 0x5b) return [];
  if (byte === 0x22) return '';
  if (byte === 0x74) return true;
  if (byte === 0x66) return false;
  if (byte === 0x6e) return null;
  return 0;
}

/**
 * The issue of a value too large to keep (`at` names it): its largest string when that alone is
 * over EPISODE_MAX_BYTES (no text of a scope is larger than a message may be), else its size.
 */
function tooLarge(at: string, capture: BoundedCapture, limits: EpisodeLimits, maxBytes: number): string {
  const { largest } = capture;
  const text = contentSizeProblem(largest.bytes, limits);
  if (text) return `${at}${largest.field === undefined ? '' : `.${largest.field}`}: ${text}`;
  return `${at}: is ${formatBytes(capture.size)} of JSON; no row of an export can be larger than ${formatBytes(maxBytes)} (${ENCODED_LIMIT_RULE})`;
}

/** Sets `key` as JSON.parse would (an own property, even `__proto__`). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Reads the export in `reader` once, its episodes checked against `limits`. Throws
 * `JsonSyntaxError` for bad JSON anywhere (found before any other check, as JSON.parse would).
 */
export function readExport(reader: ByteReader, limits: EpisodeLimits): ReadExport {
  const scanner = new JsonScanner(reader);
  const maxRow = maxEncodedEpisodeBytes(limits);
  const sizes = new Issues();
  const skeleton: Record<string, unknown> = {};
  const sections = new Map<RowSection, SectionState>();
  let deep: Array<string | number> | null = null;
  let scopeId: string | undefined;
  let document: unknown = skeleton;

  scanner.skipWhitespace();
  const first = scanner.peek();
  if (first !== 0x7b) {
    const depth = scanner.skipValue();
    if (depth > MAX_DOCUMENT_DEPTH) deep = [];
    document = standIn(first);
  } else {
    scanner.expect(0x7b);
    if (!scanner.take(0x7d)) {
      do {
        const key = scanner.readString(maxRow);
        scanner.expect(0x3a);
        if (key === null) {
          sizes.add(`(document): a key is longer than ${formatBytes(maxRow)} (${ENCODED_LIMIT_RULE})`);
          scanner.skipValue();
          continue;
        }
        scanner.skipWhitespace();
        if (isRowSection(key) && scanner.peek() === 0x5b) {
          const state = new SectionState(key);
          sections.set(key, state);
          setOwn(skeleton, key, []);
          const start = scanner.offset();
          scanner.expect(0x5b);
          if (!scanner.take(0x5d)) {
            const schema = rowSchemaOf(key);
            do {
              const i = state.count++;
              if (deep) {
                scanner.skipValue();
                continue;
              }
              const element = scanner.captureBounded(maxRow);
              if (element.bytes === null) {
                sizes.add(tooLarge(`${key}[${i}]`, element, limits, maxRow));
                continue;
              }
              const value: unknown = JSON.parse(element.bytes.toString('utf8'));
              if (element.depth + 2 > MAX_DOCUMENT_DEPTH) {
                deep = [key, i, ...(pathDeeperThan(value, MAX_DOCUMENT_DEPTH - 2) ?? [])];
                continue;
              }
              if (key === 'episodes') {
                const before = sizes.total;
                episodeSizeIssues(value, i, limits, sizes.add);
                if (sizes.total > before) continue;
              }
              const parsed = schema.safeParse(value);
              if (!parsed.success) {
                for (const issue of parsed.error.issues) state.zod.add(`${pathText([key, i, ...issue.path])}: ${issue.message}`);
                continue;
              }
              if (state.zod.total > 0) continue;
              unstorableTexts(parsed.data, `${key}[${i}]`, state.texts.add);
              checkRow(state, parsed.data, i, { start: element.start, end: element.start + element.bytes.length });
            } while (scanner.take(0x2c));
            scanner.expect(0x5d);
          }
          state.span = { start, end: scanner.offset() };
        } else {
          if (isRowSection(key)) sections.delete(key);
          if (deep) {
            scanner.skipValue();
          } else {
            const captured = scanner.captureBounded(maxRow);
            if (captured.bytes === null) {
              sizes.add(tooLarge(key, captured, limits, maxRow));
              continue;
            }
            const value: unknown = JSON.parse(captured.bytes.toString('utf8'));
            if (captured.depth + 1 > MAX_DOCUMENT_DEPTH) deep = [key, ...(pathDeeperThan(value, MAX_DOCUMENT_DEPTH - 1) ?? [])];
            setOwn(skeleton, key, value);
          }
        }
        if (key === 'scope') {
          const id = (skeleton.scope as { id?: unknown } | null | undefined)?.id;
          scopeId = typeof id === 'string' ? id : undefined;
        }
      } while (scanner.take(0x2c));
      scanner.expect(0x7d);
    }
  }
  scanner.expectEnd();
  return { document, sections, sizes, deep, scopeId };
}
