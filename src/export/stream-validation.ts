/**
 * The first pass of a streamed import: reads an export file once, one array element at a time,
 * and finds everything `parseScopeExport` finds in a whole document, with the same messages in
 * the same order: a syntax error anywhere, nesting deeper than allowed, every field zod refuses,
 * unstorable texts, duplicate ids and keys, references to rows the document does not hold, and a
 * supersession cycle.
 *
 * What it keeps is bounded by the number of rows, not by their texts: ids (and hashes of other
 * keys), the byte range of each array and of each memory, counts, and the first issues of each
 * kind. The largest thing held at once is one element, and no element is kept past the most a
 * valid message can take as JSON (`maxEncodedEpisodeBytes`): a larger one is read to its end,
 * measured and refused, naming EPISODE_MAX_BYTES, without ever being held. The second pass
 * (`stream-rows.ts`) reads the rows again from the ranges it records.
 */
import { createHash } from 'node:crypto';
import { SECTION_MODELS, type RowSectionName } from '../memory/scopes/scope-data-map';
import type { ValidationError } from '../shared/errors';
import { contentSizeProblem, ENCODED_LIMIT_RULE, formatBytes, maxEncodedEpisodeBytes, type EpisodeLimits } from '../memory/episodes/episode-limits';
import { MAX_JSON_DEPTH, pathDeeperThan } from '../shared/json-depth';
import {
  MAX_DOCUMENT_DEPTH,
  MAX_LISTED_ISSUES,
  episodeIssues,
  episodeSizeIssues,
  fieldOf,
  invalidDocument,
  observationReference,
  pathText,
  supersessionOrder,
  unstorableTexts,
} from './import-validation';
import { JsonScanner, type BoundedCapture, type ByteReader } from './json-scanner';
import { scopeExportSchema, type ScopeCounts, type ScopeExport } from './scope-document';

/** The arrays of rows, in the schema's (and the export's) order: the data map's sections of rows with ids. */
export const ROW_SECTIONS: readonly RowSection[] = SECTION_MODELS.map((m) => m.exportPlace.section);
export type RowSection = RowSectionName;

/** A byte range of the file: [start, end). */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** What the second pass needs of a valid document. */
export interface ImportPlan {
  readonly scope: ScopeExport['scope'];
  readonly profile: ScopeExport['profile'];
  readonly counts: ScopeCounts;
  /** Where each array of rows is in the file (from its `[` to after its `]`). */
  readonly sections: Readonly<Record<RowSection, Span>>;
  /** Where each memory is, in document order. */
  readonly memorySpans: readonly Span[];
  /** Memory indexes in the order they are written (each after the one that superseded it). */
  readonly memoryOrder: readonly number[];
  /** Every old id, in the order a copy's new ids are drawn (`createIdMapper`). */
  readonly oldIds: readonly string[];
}

/** The outcome of the first pass (a syntax error throws `JsonSyntaxError` instead). */
export interface ScanOutcome {
  /** `scope.id` of the document when it is a string (what the admin API checks first). */
  readonly scopeId: string | undefined;
  readonly result: { readonly ok: true; readonly plan: ImportPlan } | { readonly ok: false; readonly error: ValidationError };
}

/** The first issues of one kind, and how many there were. */
class Issues {
  readonly listed: string[] = [];
  total = 0;
  readonly add = (issue: string): void => {
    this.total++;
    if (this.listed.length < MAX_LISTED_ISSUES) this.listed.push(issue);
  };
}

/** Keeps what a uniqueness check needs of a long key (an entity key, an externalId). */
const digest = (text: string): string => (text.length <= 40 ? text : createHash('sha256').update(text).digest('base64'));

/** What one array of rows has shown so far (a repeated key starts it again, as JSON.parse keeps the last). */
class SectionState {
  readonly zod = new Issues();
  readonly texts = new Issues();
  count = 0;
  nested = 0;
  span: Span | null = null;
  readonly ids = new Set<string>();
  readonly duplicateIds = new Issues();
  /** Link triples, entity keys, digest periodEnds. */
  readonly keys = new Set<string>();
  readonly duplicateKeys = new Issues();
  /** Observation ids (entities). */
  readonly innerIds = new Set<string>();
  readonly duplicateInnerIds = new Issues();
  innerIndex = 0;
  readonly tags = new Issues();
  readonly externalIds = new Set<string>();
  readonly duplicateExternalIds = new Issues();
  externalIndex = 0;
  readonly controls = new Issues();
  /** Memories: id, supersededById and sources by index; links: from and to. */
  readonly rowIds: string[] = [];
  readonly refA: Array<string | null> = [];
  readonly refB: Array<string[] | string> = [];
  readonly spans: Span[] = [];
  /** Entities: the episode each observation cites (entity index, observation index, episode id). */
  readonly observationEpisodes: Array<readonly [number, number, string]> = [];
  /** The clock episode times are checked against, read once per import. */
  readonly now = new Date();

  constructor(readonly name: RowSection) {}

  unique(set: Set<string>, key: string, stored: string, issues: Issues, at: string, what: string): void {
    if (set.has(stored)) issues.add(`${at}: duplicate ${what} ${key}`);
    set.add(stored);
  }
}

type Row<S extends RowSection> = ScopeExport[S][number];

/** What a valid row adds to its section's checks. */
function checkRow(state: SectionState, row: unknown, i: number, span: Span): void {
  const name = state.name;
  const at = `${name}[${i}]`;
  state.unique(state.ids, (row as { id: string }).id, (row as { id: string }).id, state.duplicateIds, at, 'id');
  switch (name) {
    case 'episodes': {
      const e = row as Row<'episodes'>;
      episodeIssues(e, i, state.now, state.controls.add);
      const tags = new Set<string>();
      e.tags.forEach((t, j) => state.unique(tags, `${t.kind}:${t.value}`, `${t.kind}:${t.value}`, state.tags, `episodes[${i}].tags[${j}]`, 'tag'));
      state.nested += e.tags.length;
      if (e.externalId !== null)
        state.unique(state.externalIds, e.externalId, digest(e.externalId), state.duplicateExternalIds, `episodes[${state.externalIndex++}]`, 'externalId');
      return;
    }
    case 'memories': {
      const m = row as Row<'memories'>;
      state.rowIds.push(m.id);
      state.refA.push(m.supersededById);
      state.refB.push(m.sourceEpisodeIds);
      state.spans.push(span);
      state.nested += m.sourceEpisodeIds.length;
      return;
    }
    case 'memoryLinks': {
      const l = row as Row<'memoryLinks'>;
      const link = `${l.fromId} -> ${l.toId} (${l.kind})`;
      state.unique(state.keys, link, digest(link), state.duplicateKeys, at, 'link');
      state.refA.push(l.fromId);
      state.refB.push(l.toId);
      return;
    }
    case 'entities': {
      const e = row as Row<'entities'>;
      state.unique(state.keys, e.key, digest(e.key), state.duplicateKeys, at, 'key');
      for (const o of e.observations) state.unique(state.innerIds, o.id, o.id, state.duplicateInnerIds, `entities.observations[${state.innerIndex++}]`, 'id');
      e.observations.forEach((o, j) => {
        if (o.episodeId !== null) state.observationEpisodes.push([i, j, o.episodeId]);
      });
      state.nested += e.observations.length;
      return;
    }
    case 'digests': {
      const d = row as Row<'digests'>;
      state.unique(state.keys, d.periodEnd, d.periodEnd, state.duplicateKeys, at, 'periodEnd');
      return;
    }
    default:
      return;
  }
}

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

/** The issues of several kinds, in order, as one error (the first 20 listed, all counted). */
function errorOf(groups: readonly Issues[]): ValidationError | undefined {
  const total = groups.reduce((sum, g) => sum + g.total, 0);
  if (total === 0) return undefined;
  return invalidDocument(groups.flatMap((g) => g.listed).slice(0, MAX_LISTED_ISSUES), total);
}

/**
 * Reads the export in `reader` once and checks it whole, its episodes against `limits` (the same
 * as every other door's). Throws `JsonSyntaxError` for bad JSON (anywhere: checked before
 * anything else, as JSON.parse would be).
 */
export function scanScopeExport(reader: ByteReader, limits: EpisodeLimits): ScanOutcome {
  const scanner = new JsonScanner(reader);
  const maxRow = maxEncodedEpisodeBytes(limits);
  /** Values too large to store (or to hold): reported first, and alone. */
  const sizes = new Issues();
  const skeleton: Record<string, unknown> = {};
  const sections = new Map<RowSection, SectionState>();
  const isSection = (key: string): key is RowSection => (ROW_SECTIONS as readonly string[]).includes(key);
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
        if (isSection(key) && scanner.peek() === 0x5b) {
          const state = new SectionState(key);
          sections.set(key, state);
          setOwn(skeleton, key, []);
          const start = scanner.offset();
          scanner.expect(0x5b);
          if (!scanner.take(0x5d)) {
            const schema = scopeExportSchema.shape[key].element;
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
          if (isSection(key)) sections.delete(key);
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

  if (deep) {
    const error = invalidDocument([`${fieldOf(deep)}: nested more than ${MAX_DOCUMENT_DEPTH} levels deep (a message's metadata may have ${MAX_JSON_DEPTH})`]);
    return { scopeId, result: { ok: false, error } };
  }
  const outcome = (error: ValidationError | undefined, plan?: ImportPlan): ScanOutcome => ({
    scopeId,
    result: error ? { ok: false, error } : { ok: true, plan: plan! },
  });
  const sizeError = errorOf([sizes]);
  if (sizeError) return outcome(sizeError);

  // The fields zod refuses, in the order zod lists them for a whole document: by the schema's
  // keys (each array's elements in place of the array), unknown keys last.
  const top = scopeExportSchema.safeParse(document);
  const shapeKeys = Object.keys(scopeExportSchema.shape);
  const zodGroups: Issues[] = [];
  const topIssues = top.success ? [] : top.error.issues;
  for (const key of shapeKeys) {
    const group = new Issues();
    for (const issue of topIssues) if (issue.path[0] === key) group.add(`${pathText(issue.path)}: ${issue.message}`);
    zodGroups.push(group);
    const state = isSection(key) ? sections.get(key) : undefined;
    if (state) zodGroups.push(state.zod);
  }
  const rest = new Issues();
  for (const issue of topIssues)
    if (issue.path.length === 0 || !shapeKeys.includes(String(issue.path[0]))) rest.add(`${pathText(issue.path)}: ${issue.message}`);
  zodGroups.push(rest);
  const zodError = errorOf(zodGroups);
  if (zodError || !top.success) return outcome(zodError ?? invalidDocument(['(document): not a scope export']));

  const doc = top.data;
  const s = (name: RowSection) => sections.get(name)!;
  const topTexts = new Issues();
  unstorableTexts(doc, '', topTexts.add);

  const memories = s('memories');
  const episodes = s('episodes');
  const references = new Issues();
  memories.rowIds.forEach((id, i) => {
    const supersededById = memories.refA[i]!;
    const sources = memories.refB[i] as string[];
    if (supersededById !== null && !memories.ids.has(supersededById))
      references.add(`memories[${i}].supersededById: no memory ${supersededById} in the document`);
    if (supersededById === id) references.add(`memories[${i}].supersededById: a memory cannot supersede itself`);
    sources.forEach((episodeId, j) => {
      if (!episodes.ids.has(episodeId)) references.add(`memories[${i}].sourceEpisodeIds[${j}]: no episode ${episodeId} in the document`);
    });
    if (new Set(sources).size !== sources.length) references.add(`memories[${i}].sourceEpisodeIds: duplicate episode ids`);
  });
  const links = s('memoryLinks');
  links.refA.forEach((fromId, i) => {
    const toId = links.refB[i] as string;
    if (!memories.ids.has(fromId!)) references.add(`memoryLinks[${i}].fromId: no memory ${fromId} in the document`);
    if (!memories.ids.has(toId)) references.add(`memoryLinks[${i}].toId: no memory ${toId} in the document`);
  });
  for (const [entity, j, episodeId] of s('entities').observationEpisodes) observationReference(episodeId, entity, j, episodes.ids, references.add);
  const order = supersessionOrder(memories.rowIds.map((id, index) => ({ id, supersededById: memories.refA[index]!, index })));
  if (order === null) references.add('memories: the supersededById references form a cycle');

  const checkError = errorOf([
    topTexts,
    ...ROW_SECTIONS.map((name) => s(name).texts),
    episodes.controls,
    episodes.duplicateIds,
    memories.duplicateIds,
    s('conversations').duplicateIds,
    links.duplicateIds,
    links.duplicateKeys,
    s('entities').duplicateIds,
    s('entities').duplicateKeys,
    s('entities').duplicateInnerIds,
    s('digests').duplicateIds,
    s('digests').duplicateKeys,
    s('sleepRuns').duplicateIds,
    s('auditEvents').duplicateIds,
    episodes.tags,
    episodes.duplicateExternalIds,
    references,
  ]);
  if (checkError) return outcome(checkError);

  const counts: ScopeCounts = {
    profile: doc.profile ? 1 : 0,
    conversations: s('conversations').count,
    episodes: episodes.count,
    episodeTags: episodes.nested,
    memories: memories.count,
    memorySources: memories.nested,
    memoryLinks: links.count,
    entities: s('entities').count,
    entityObservations: s('entities').nested,
    digests: s('digests').count,
    sleepRuns: s('sleepRuns').count,
    auditEvents: s('auditEvents').count,
  };
  const oldIds = [doc.scope.id];
  for (const set of [...ROW_SECTIONS.map((name) => s(name).ids), s('entities').innerIds]) for (const id of set) oldIds.push(id);
  return outcome(undefined, {
    scope: doc.scope,
    profile: doc.profile,
    counts,
    sections: Object.fromEntries(ROW_SECTIONS.map((name) => [name, s(name).span!])) as Record<RowSection, Span>,
    memorySpans: memories.spans,
    memoryOrder: order!.map((m) => m.index),
    oldIds,
  });
}
