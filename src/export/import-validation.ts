/**
 * Validation of a scope export document before anything is written: the zod schema, then what
 * zod cannot see (unique ids, references between rows, supersession cycles, texts no store keeps
 * as written). Every problem is listed with its path, so a user can fix a hand-edited file.
 */
import { contentSizeProblem, metadataSizeProblem, type EpisodeLimits } from '../memory/episodes/episode-limits';
import { ValidationError } from '../shared/errors';
import { MAX_JSON_DEPTH, pathDeeperThan } from '../shared/json-depth';
import { EMPTY_CONTENT_PROBLEM, isBlankText, normalizeText, timestampProblem } from '../memory/episodes/normalize';
import { scopeExportSchema, type ScopeExport } from './scope-document';

/** Issues an error lists; the rest are counted. */
export const MAX_LISTED_ISSUES = 20;
/** The document's own structure (`entities[0].observations[0]...`) plus the depth a message's metadata may have. */
export const MAX_DOCUMENT_DEPTH = MAX_JSON_DEPTH + 8;

/** The field a deep path is in: up to its second key (`episodes[0].metadata`, `scope.settings`). */
export function fieldOf(path: ReadonlyArray<string | number>): string {
  const keys = path.findIndex((part, i) => typeof part === 'string' && path.slice(0, i).some((p) => typeof p === 'string'));
  return pathText(keys === -1 ? path : path.slice(0, keys + 1));
}

/** `memories[3].confidence` from zod's path. */
export function pathText(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${String(part)}`;
  return out || '(document)';
}

/**
 * The error for a document with `issues`; lists the first {@link MAX_LISTED_ISSUES}. `total` is
 * the number of issues when only the first ones were kept (the streamed import).
 */
export function invalidDocument(issues: readonly string[], total = issues.length): ValidationError {
  const listed = issues.slice(0, MAX_LISTED_ISSUES);
  const more = total > listed.length ? `\n  ... and ${total - listed.length} more` : '';
  return new ValidationError(`The scope export is not valid; nothing was imported:\n  ${listed.join('\n  ')}${more}`, {
    code: 'import.invalid_document',
    hint: 'Import a file written by `npm run cli -- export --scope KEY` (format nocturne.scope-export, version 1).',
    details: { issues: listed },
  });
}

/** Checks what zod cannot see: unique ids, and every reference pointing at a row of the document. */
function referenceIssues(doc: ScopeExport): string[] {
  const issues: string[] = [];
  const unique = (name: string, keys: readonly string[], what: string) => {
    const seen = new Set<string>();
    keys.forEach((key, i) => {
      if (seen.has(key)) issues.push(`${name}[${i}]: duplicate ${what} ${key}`);
      seen.add(key);
    });
    return seen;
  };
  const episodes = unique(
    'episodes',
    doc.episodes.map((e) => e.id),
    'id',
  );
  const memories = unique(
    'memories',
    doc.memories.map((m) => m.id),
    'id',
  );
  unique(
    'conversations',
    doc.conversations.map((c) => c.id),
    'id',
  );
  unique(
    'memoryLinks',
    doc.memoryLinks.map((l) => l.id),
    'id',
  );
  unique(
    'memoryLinks',
    doc.memoryLinks.map((l) => `${l.fromId} -> ${l.toId} (${l.kind})`),
    'link',
  );
  unique(
    'entities',
    doc.entities.map((e) => e.id),
    'id',
  );
  unique(
    'entities',
    doc.entities.map((e) => e.key),
    'key',
  );
  unique(
    'entities.observations',
    doc.entities.flatMap((e) => e.observations.map((o) => o.id)),
    'id',
  );
  unique(
    'digests',
    doc.digests.map((d) => d.id),
    'id',
  );
  unique(
    'digests',
    doc.digests.map((d) => d.periodEnd),
    'periodEnd',
  );
  unique(
    'reminders',
    doc.reminders.map((r) => r.id),
    'id',
  );
  unique(
    'sleepRuns',
    doc.sleepRuns.map((r) => r.id),
    'id',
  );
  unique(
    'auditEvents',
    doc.auditEvents.map((a) => a.id),
    'id',
  );
  doc.episodes.forEach((e, i) =>
    unique(
      `episodes[${i}].tags`,
      e.tags.map((t) => `${t.kind}:${t.value}`),
      'tag',
    ),
  );
  unique(
    'episodes',
    doc.episodes.flatMap((e) => (e.externalId === null ? [] : [e.externalId])),
    'externalId',
  );

  doc.memories.forEach((m, i) => {
    if (m.supersededById !== null && !memories.has(m.supersededById))
      issues.push(`memories[${i}].supersededById: no memory ${m.supersededById} in the document`);
    if (m.supersededById === m.id) issues.push(`memories[${i}].supersededById: a memory cannot supersede itself`);
    m.sourceEpisodeIds.forEach((episodeId, j) => {
      if (!episodes.has(episodeId)) issues.push(`memories[${i}].sourceEpisodeIds[${j}]: no episode ${episodeId} in the document`);
    });
    if (new Set(m.sourceEpisodeIds).size !== m.sourceEpisodeIds.length) issues.push(`memories[${i}].sourceEpisodeIds: duplicate episode ids`);
  });
  doc.memoryLinks.forEach((l, i) => {
    if (!memories.has(l.fromId)) issues.push(`memoryLinks[${i}].fromId: no memory ${l.fromId} in the document`);
    if (!memories.has(l.toId)) issues.push(`memoryLinks[${i}].toId: no memory ${l.toId} in the document`);
  });
  doc.entities.forEach((e, i) => e.observations.forEach((o, j) => observationReference(o.episodeId, i, j, episodes, (issue) => issues.push(issue))));
  if (supersessionOrder(doc.memories) === null) issues.push('memories: the supersededById references form a cycle');
  return issues;
}

/**
 * An exported episode (`value`, at `index`, nested no deeper than allowed) measured by the limits
 * every other door applies (`episode-limits.ts`): its content against EPISODE_MAX_BYTES, its
 * metadata against the metadata cap. Each issue goes to `add`. A value that is not an episode
 * adds nothing here; the schema says what is wrong with it.
 */
export function episodeSizeIssues(value: unknown, index: number, limits: EpisodeLimits, add: (issue: string) => void): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const { content, metadata } = value as { content?: unknown; metadata?: unknown };
  const text = typeof content === 'string' ? contentSizeProblem(Buffer.byteLength(content, 'utf8'), limits) : null;
  if (text) add(`episodes[${index}].content: ${text}`);
  const meta = metadataSizeProblem(metadata);
  if (meta) add(`episodes[${index}].metadata: ${meta}`);
}

/** C0 and C1 control characters but tab and newline: never part of a stored message. */
const CONTROL = /[\u0001-\u0008\u000B-\u001F\u007F-\u009F]/;

/**
 * Texts no store keeps as written in `value` (at `path`): a NUL character (PostgreSQL refuses it
 * in text and jsonb) or a lone surrogate (written as U+FFFD, so the import would not be exact)
 * anywhere, keys included. Each issue goes to `add`, in document order.
 */
export function unstorableTexts(value: unknown, path: string, add: (issue: string) => void): void {
  const check = (text: string, at: string) => {
    if (text.includes('\u0000')) add(`${at}: contains a NUL character, which cannot be stored`);
    else if (!text.isWellFormed()) add(`${at}: is not well-formed Unicode (a lone surrogate)`);
  };
  const walk = (inner: unknown, at: string) => {
    if (typeof inner === 'string') check(inner, at);
    else if (Array.isArray(inner)) inner.forEach((item, i) => walk(item, `${at}[${i}]`));
    else if (inner !== null && typeof inner === 'object') {
      for (const [key, item] of Object.entries(inner)) {
        const next = at ? `${at}.${key}` : key;
        check(key, `${next} (the key)`);
        walk(item, next);
      }
    }
  };
  walk(value, path);
}

/** Control characters in a message's texts, which Nocturne never stores (docs/export.md). */
export function controlCharacters(episode: ScopeExport['episodes'][number], index: number, add: (issue: string) => void): void {
  for (const field of ['content', 'author', 'channel', 'summary'] as const) {
    const text = episode[field];
    if (typeof text === 'string' && CONTROL.test(text)) add(`episodes[${index}].${field}: contains control characters (messages are stored without them)`);
  }
}

/**
 * An entity observation's episode must be an episode of the document: the import writes every row
 * under one scope, and an id from elsewhere names another scope's episode (or none). The database
 * refuses it too (a composite key); this says which row, before anything is written.
 */
export function observationReference(
  episodeId: string | null,
  entity: number,
  index: number,
  episodes: ReadonlySet<string>,
  add: (issue: string) => void,
): void {
  if (episodeId !== null && !episodes.has(episodeId))
    add(`entities[${entity}].observations[${index}].episodeId: no episode ${episodeId} in the document (an observation cites an episode of its own scope)`);
}

/**
 * What every door refuses in a message, here for an exported one: control characters, content
 * that shows nothing (the ingest path's {@link isBlankText}) and a time out of the plausible range
 * (the ingest path's {@link timestampProblem}: more than 5 minutes ahead of `now`, or before 1970).
 */
export function episodeIssues(episode: ScopeExport['episodes'][number], index: number, now: Date, add: (issue: string) => void): void {
  controlCharacters(episode, index, add);
  if (isBlankText(normalizeText(episode.content))) add(`episodes[${index}].content: ${EMPTY_CONTENT_PROBLEM}`);
  for (const field of ['timestamp', 'createdAt'] as const) {
    const problem = timestampProblem(new Date(episode[field]), now, episode[field]);
    if (problem) add(`episodes[${index}].${field}: ${problem}`);
  }
}

/** The text issues of a whole document: {@link unstorableTexts}, then {@link episodeIssues}. */
function textIssues(doc: ScopeExport): string[] {
  const issues: string[] = [];
  const add = (issue: string) => issues.push(issue);
  unstorableTexts(doc, '', add);
  const now = new Date();
  doc.episodes.forEach((episode, i) => episodeIssues(episode, i, now, add));
  return issues;
}

/**
 * Validates an untrusted value as a scope export, its episodes against `limits`. Throws
 * `import.invalid_document` naming the path of every bad field (`memories[3].confidence: ...`);
 * episodes too large to store are listed first and alone, as the streamed import does.
 */
export function parseScopeExport(value: unknown, limits: EpisodeLimits): ScopeExport {
  // Before zod (z.json() recurses) or any other walk: 20,000 levels overflowed the stack (a 500).
  const deep = pathDeeperThan(value, MAX_DOCUMENT_DEPTH);
  if (deep) throw invalidDocument([`${fieldOf(deep)}: nested more than ${MAX_DOCUMENT_DEPTH} levels deep (a message's metadata may have ${MAX_JSON_DEPTH})`]);
  const episodes = value !== null && typeof value === 'object' ? (value as { episodes?: unknown }).episodes : undefined;
  if (Array.isArray(episodes)) {
    const sizes: string[] = [];
    episodes.forEach((episode, i) => episodeSizeIssues(episode, i, limits, (issue) => sizes.push(issue)));
    if (sizes.length > 0) throw invalidDocument(sizes);
  }
  const parsed = scopeExportSchema.safeParse(value);
  if (!parsed.success) throw invalidDocument(parsed.error.issues.map((issue) => `${pathText(issue.path)}: ${issue.message}`));
  const issues = [...textIssues(parsed.data), ...referenceIssues(parsed.data)];
  if (issues.length > 0) throw invalidDocument(issues);
  return parsed.data;
}

/**
 * Memories ordered so that each comes after the one that superseded it (foreign keys hold row by
 * row); null on a cycle.
 */
export function supersessionOrder<T extends { id: string; supersededById: string | null }>(memories: readonly T[]): T[] | null {
  const byId = new Map(memories.map((m) => [m.id, m]));
  const state = new Map<string, 'visiting' | 'done'>();
  const out: T[] = [];
  for (const start of memories) {
    // Walk the chain iteratively: history chains can be long.
    const chain: T[] = [];
    let current: T | undefined = start;
    while (current && state.get(current.id) !== 'done') {
      if (state.get(current.id) === 'visiting') return null;
      state.set(current.id, 'visiting');
      chain.push(current);
      current = current.supersededById === null ? undefined : byId.get(current.supersededById);
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      state.set(chain[i]!.id, 'done');
      out.push(chain[i]!);
    }
  }
  return out;
}
