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
 * (`stream-rows.ts`) reads the rows again from the ranges it records (`stream-plan.ts`).
 *
 * The reading is `stream-read.ts`, what it remembers of each array `stream-sections.ts`; this file
 * judges the whole document from them, in the order `parseScopeExport` reports.
 */
import type { ValidationError } from '../shared/errors';
import type { EpisodeLimits } from '../memory/episodes/episode-limits';
import { MAX_JSON_DEPTH } from '../shared/json-depth';
import { MAX_DOCUMENT_DEPTH, fieldOf, invalidDocument, observationReference, pathText, supersessionOrder, unstorableTexts } from './import-validation';
import type { ByteReader } from './json-byte-cursor';
import { scopeExportSchema, type ScopeCounts, type ScopeExport } from './scope-document';
import { ROW_SECTIONS, type ImportPlan, type RowSection, type Span } from './stream-plan';
import { isRowSection, readExport, type ReadExport } from './stream-read';
import { Issues, SectionState, errorOf } from './stream-sections';

/** The outcome of the first pass (a syntax error throws `JsonSyntaxError` instead). */
export interface ScanOutcome {
  /** `scope.id` of the document when it is a string (what the admin API checks first). */
  readonly scopeId: string | undefined;
  readonly result: { readonly ok: true; readonly plan: ImportPlan } | { readonly ok: false; readonly error: ValidationError };
}

/**
 * Reads the export in `reader` once and checks it whole, its episodes against `limits` (the same
 * as every other door's). Throws `JsonSyntaxError` for bad JSON (anywhere: checked before
 * anything else, as JSON.parse would be).
 */
export function scanScopeExport(reader: ByteReader, limits: EpisodeLimits): ScanOutcome {
  const read = readExport(reader, limits);
  const { scopeId, deep } = read;
  if (deep) {
    const error = invalidDocument([`${fieldOf(deep)}: nested more than ${MAX_DOCUMENT_DEPTH} levels deep (a message's metadata may have ${MAX_JSON_DEPTH})`]);
    return { scopeId, result: { ok: false, error } };
  }
  const outcome = (error: ValidationError | undefined, plan?: ImportPlan): ScanOutcome => ({
    scopeId,
    result: error ? { ok: false, error } : { ok: true, plan: plan! },
  });
  const sizeError = errorOf([read.sizes]);
  if (sizeError) return outcome(sizeError);

  const top = scopeExportSchema.safeParse(read.document);
  const zodError = errorOf(zodIssuesInOrder(top.success ? [] : top.error.issues, read.sections));
  if (zodError || !top.success) return outcome(zodError ?? invalidDocument(['(document): not a scope export']));

  const doc = top.data;
  // A section the document may leave out (reminders) is read as an empty one.
  const s = (name: RowSection) => read.sections.get(name) ?? new SectionState(name);
  const topTexts = new Issues();
  unstorableTexts(doc, '', topTexts.add);
  const memories = s('memories');
  const order = supersessionOrder(memories.rowIds.map((id, index) => ({ id, supersededById: memories.refA[index]!, index })));
  const references = referenceIssues(read);
  if (order === null) references.add('memories: the supersededById references form a cycle');

  const checkError = errorOf([
    topTexts,
    ...ROW_SECTIONS.map((name) => s(name).texts),
    s('episodes').controls,
    s('episodes').duplicateIds,
    memories.duplicateIds,
    s('conversations').duplicateIds,
    s('memoryLinks').duplicateIds,
    s('memoryLinks').duplicateKeys,
    s('entities').duplicateIds,
    s('entities').duplicateKeys,
    s('entities').duplicateInnerIds,
    s('digests').duplicateIds,
    s('digests').duplicateKeys,
    s('reminders').duplicateIds,
    s('sleepRuns').duplicateIds,
    s('auditEvents').duplicateIds,
    s('episodes').tags,
    s('episodes').duplicateExternalIds,
    references,
  ]);
  if (checkError) return outcome(checkError);
  return outcome(undefined, planOf(doc, read, order!));
}

/**
 * The fields zod refuses, in the order zod lists them for a whole document: by the schema's keys
 * (each array's elements in place of the array), unknown keys last.
 */
function zodIssuesInOrder(
  topIssues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[],
  sections: ReadonlyMap<RowSection, SectionState>,
): Issues[] {
  const shapeKeys = Object.keys(scopeExportSchema.shape);
  const groups: Issues[] = [];
  for (const key of shapeKeys) {
    const group = new Issues();
    for (const issue of topIssues) if (issue.path[0] === key) group.add(`${pathText(issue.path)}: ${issue.message}`);
    groups.push(group);
    const state = isRowSection(key) ? sections.get(key) : undefined;
    if (state) groups.push(state.zod);
  }
  const rest = new Issues();
  for (const issue of topIssues)
    if (issue.path.length === 0 || !shapeKeys.includes(String(issue.path[0]))) rest.add(`${pathText(issue.path)}: ${issue.message}`);
  groups.push(rest);
  return groups;
}

/** References to rows the document does not hold: supersessions, sources, links, observations. */
function referenceIssues({ sections }: ReadExport): Issues {
  const s = (name: RowSection) => sections.get(name)!;
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
  return references;
}

/** What the second pass needs of a valid document: counts, ranges, the write order, the old ids. */
function planOf(doc: ScopeExport, { sections }: ReadExport, order: readonly { readonly index: number }[]): ImportPlan {
  const s = (name: RowSection) => sections.get(name) ?? new SectionState(name);
  const episodes = s('episodes');
  const memories = s('memories');
  const links = s('memoryLinks');
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
    reminders: s('reminders').count,
    sleepRuns: s('sleepRuns').count,
    auditEvents: s('auditEvents').count,
  };
  const oldIds = [doc.scope.id];
  for (const set of [...ROW_SECTIONS.map((name) => s(name).ids), s('entities').innerIds]) for (const id of set) oldIds.push(id);
  return {
    scope: doc.scope,
    profile: doc.profile,
    counts,
    sections: Object.fromEntries(ROW_SECTIONS.map((name) => [name, s(name).span])) as Record<RowSection, Span | null>,
    memorySpans: memories.spans,
    memoryOrder: order.map((m) => m.index),
    oldIds,
  };
}
