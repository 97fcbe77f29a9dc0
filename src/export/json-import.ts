/**
 * Imports a {@link ScopeExport} document: validated first (zod, then the references between its
 * rows), written in one transaction, so a bad document or a clash writes nothing.
 *
 * Two modes:
 * - `exact` (default) keeps every id and timestamp, so exporting the imported scope gives the same
 *   bytes. The scope must be new, or exist under that key with no data (created by a first
 *   message, say); ids already present in the database are refused.
 * - `copy` gives the scope and every row new ids (references and ids inside JSON documents follow),
 *   keeping timestamps: for a second copy of a scope in the same database, under a new key.
 *
 * The full-text index follows through the database triggers. Vectors are not in the document:
 * rows arrive with `embeddedWith` null, which is exactly the embedding worker's queue.
 */
import { Prisma as PrismaValues } from '../generated/sqlite/client';
import { AppError, ValidationError } from '../shared/errors';
import { uuidv7 } from '../shared/ids';
import type { Prisma, PrismaClient } from '../storage/prisma';
import { countScopeExport, scopeExportSchema, type JsonValue, type ScopeCounts, type ScopeExport } from './scope-document';

/** `exact` reproduces the exported scope (ids kept); `copy` makes a second copy with new ids. */
export type ImportMode = 'exact' | 'copy';

/** How {@link importScope} writes a document. */
export interface ImportOptions {
  /** `exact` keeps ids (default); `copy` makes new ones. */
  readonly mode?: ImportMode;
  /** Import under this key instead of the document's (required by `copy` when the key is taken). */
  readonly scopeKey?: string;
}

/** What an import wrote, for the CLI and the API to report. */
export interface ImportResult {
  readonly scopeId: string;
  readonly scopeKey: string;
  readonly mode: ImportMode;
  readonly counts: ScopeCounts;
}

type Tx = Prisma.TransactionClient;

const BATCH = 500;
const MAX_LISTED_ISSUES = 20;
/** Options of the import transaction. Generous: a scope of 100,000 episodes takes tens of seconds on a small machine. */
export const IMPORT_TRANSACTION = { timeout: 30 * 60_000, maxWait: 60_000 } as const;

/** `memories[3].confidence` from zod's path. */
function pathText(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${String(part)}`;
  return out || '(document)';
}

function invalidDocument(issues: readonly string[]): ValidationError {
  const listed = issues.slice(0, MAX_LISTED_ISSUES);
  const more = issues.length > listed.length ? `\n  ... and ${issues.length - listed.length} more` : '';
  return new ValidationError(`The scope export is not valid; nothing was imported:\n  ${listed.join('\n  ')}${more}`, {
    code: 'import.invalid_document',
    hint: 'Import a file written by `npm run cli -- export --scope KEY` (format nocturne.scope-export, version 1).',
    details: { issues: listed },
  });
}

/** Checks what zod cannot see: unique ids, and every reference pointing at a row of the document. */
export function referenceIssues(doc: ScopeExport): string[] {
  const issues: string[] = [];
  const unique = (name: string, keys: readonly string[], what: string) => {
    const seen = new Set<string>();
    keys.forEach((key, i) => {
      if (seen.has(key)) issues.push(`${name}[${i}]: duplicate ${what} ${key}`);
      seen.add(key);
    });
    return seen;
  };
  const episodes = unique('episodes', doc.episodes.map((e) => e.id), 'id');
  const memories = unique('memories', doc.memories.map((m) => m.id), 'id');
  unique('conversations', doc.conversations.map((c) => c.id), 'id');
  unique('memoryLinks', doc.memoryLinks.map((l) => l.id), 'id');
  unique('memoryLinks', doc.memoryLinks.map((l) => `${l.fromId} -> ${l.toId} (${l.kind})`), 'link');
  unique('entities', doc.entities.map((e) => e.id), 'id');
  unique('entities', doc.entities.map((e) => e.key), 'key');
  unique('entities.observations', doc.entities.flatMap((e) => e.observations.map((o) => o.id)), 'id');
  unique('digests', doc.digests.map((d) => d.id), 'id');
  unique('digests', doc.digests.map((d) => d.periodEnd), 'periodEnd');
  unique('sleepRuns', doc.sleepRuns.map((r) => r.id), 'id');
  unique('auditEvents', doc.auditEvents.map((a) => a.id), 'id');
  doc.episodes.forEach((e, i) => unique(`episodes[${i}].tags`, e.tags.map((t) => `${t.kind}:${t.value}`), 'tag'));
  unique('episodes', doc.episodes.flatMap((e) => (e.externalId === null ? [] : [e.externalId])), 'externalId');

  doc.memories.forEach((m, i) => {
    if (m.supersededById !== null && !memories.has(m.supersededById)) issues.push(`memories[${i}].supersededById: no memory ${m.supersededById} in the document`);
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
  if (supersessionOrder(doc.memories) === null) issues.push('memories: the supersededById references form a cycle');
  return issues;
}

/** C0 and C1 control characters but tab and newline: never part of a stored message. */
const CONTROL = /[\u0001-\u0008\u000B-\u001F\u007F-\u009F]/;

/**
 * Texts no store keeps as written: a NUL character (PostgreSQL refuses it in text and jsonb) or a
 * lone surrogate (written as U+FFFD, so the import would not be exact) anywhere, keys included;
 * and control characters in a message's texts, which Nocturne never stores (docs/export.md).
 */
export function textIssues(doc: ScopeExport): string[] {
  const issues: string[] = [];
  const check = (text: string, path: string) => {
    if (text.includes('\u0000')) issues.push(`${path}: contains a NUL character, which cannot be stored`);
    else if (!text.isWellFormed()) issues.push(`${path}: is not well-formed Unicode (a lone surrogate)`);
  };
  const walk = (value: unknown, path: string) => {
    if (typeof value === 'string') check(value, path);
    else if (Array.isArray(value)) value.forEach((inner, i) => walk(inner, `${path}[${i}]`));
    else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        const at = path ? `${path}.${key}` : key;
        check(key, `${at} (the key)`);
        walk(inner, at);
      }
    }
  };
  walk(doc, '');
  doc.episodes.forEach((episode, i) => {
    for (const field of ['content', 'author', 'channel', 'summary'] as const) {
      const text = episode[field];
      if (typeof text === 'string' && CONTROL.test(text)) issues.push(`episodes[${i}].${field}: contains control characters (messages are stored without them)`);
    }
  });
  return issues;
}

/**
 * Validates an untrusted value as a scope export. Throws `import.invalid_document` naming the path
 * of every bad field (`memories[3].confidence: ...`).
 */
export function parseScopeExport(value: unknown): ScopeExport {
  const parsed = scopeExportSchema.safeParse(value);
  if (!parsed.success) throw invalidDocument(parsed.error.issues.map((issue) => `${pathText(issue.path)}: ${issue.message}`));
  const issues = [...textIssues(parsed.data), ...referenceIssues(parsed.data)];
  if (issues.length > 0) throw invalidDocument(issues);
  return parsed.data;
}

/** Memories ordered so that each comes after the one that superseded it (foreign keys hold row by row); null on a cycle. */
function supersessionOrder<T extends { id: string; supersededById: string | null }>(memories: readonly T[]): T[] | null {
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

const date = (value: string): Date => new Date(value);
const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));
const nullableJson = (value: JsonValue | null) => (value === null ? PrismaValues.DbNull : (value as Prisma.InputJsonValue));
const requiredJson = (value: JsonValue) => (value === null ? PrismaValues.JsonNull : (value as Prisma.InputJsonValue));

async function inBatches<T>(rows: readonly T[], write: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < rows.length; start += BATCH) await write(rows.slice(start, start + BATCH));
}

/**
 * Writes a validated document's rows under `scopeId` on a transaction client: the scope row
 * (created, or updated in place when `scopeExists`), then every table in foreign-key order. No
 * checks beyond the database's own; callers validate first ({@link importScope}, migrate-store).
 */
export async function insertScope(tx: Tx, doc: ScopeExport, target: { scopeId: string; scopeKey: string; scopeExists: boolean }): Promise<void> {
  const { scopeId } = target;
  const s = doc.scope;
  const scopeData = {
    key: target.scopeKey,
    channel: s.channel,
    kind: s.kind,
    title: s.title,
    ownerId: s.ownerId,
    timezone: s.timezone,
    paused: s.paused,
    settings: nullableJson(s.settings),
    lastMessageAt: dateOrNull(s.lastMessageAt),
    createdAt: date(s.createdAt),
    updatedAt: date(s.updatedAt),
  };
  if (target.scopeExists) await tx.scope.update({ where: { id: scopeId }, data: scopeData });
  else await tx.scope.create({ data: { id: scopeId, ...scopeData } });

  if (doc.profile) {
    const p = doc.profile;
    await tx.profile.create({ data: { scopeId, soul: p.soul, data: nullableJson(p.data), version: p.version, updatedAt: date(p.updatedAt) } });
  }
  await inBatches(doc.conversations, (batch) =>
    tx.conversation.createMany({
      data: batch.map((c) => ({
        id: c.id,
        scopeId,
        status: c.status,
        startedAt: date(c.startedAt),
        lastActivityAt: date(c.lastActivityAt),
        endedAt: dateOrNull(c.endedAt),
        endReason: c.endReason,
        summary: c.summary,
        state: nullableJson(c.state),
      })),
    }),
  );
  await inBatches(doc.episodes, (batch) =>
    tx.episode.createMany({
      data: batch.map((e) => ({
        id: e.id,
        scopeId,
        channel: e.channel,
        role: e.role,
        author: e.author,
        content: e.content,
        summary: e.summary,
        timestamp: date(e.timestamp),
        conversationId: e.conversationId,
        turn: e.turn,
        externalId: e.externalId,
        metadata: nullableJson(e.metadata),
        importance: e.importance,
        importanceSource: e.importanceSource,
        consolidated: e.consolidated,
        consolidationAttempts: e.consolidationAttempts,
        consolidatedAt: dateOrNull(e.consolidatedAt),
        contentHash: e.contentHash,
        embeddedWith: null,
        createdAt: date(e.createdAt),
      })),
    }),
  );
  await inBatches(
    doc.episodes.flatMap((e) => e.tags.map((t) => ({ scopeId, episodeId: e.id, kind: t.kind, value: t.value }))),
    (batch) => tx.episodeTag.createMany({ data: batch }),
  );
  await inBatches(supersessionOrder(doc.memories) ?? [], (batch) =>
    tx.memory.createMany({
      data: batch.map((m) => ({
        id: m.id,
        scopeId,
        category: m.category,
        content: m.content,
        confidence: m.confidence,
        importance: m.importance,
        active: m.active,
        reinforcementCount: m.reinforcementCount,
        lastReinforcedAt: date(m.lastReinforcedAt),
        sourceType: m.sourceType,
        sourceTrust: m.sourceTrust,
        validFrom: date(m.validFrom),
        validTo: dateOrNull(m.validTo),
        supersededById: m.supersededById,
        embeddedWith: null,
        linkedAt: dateOrNull(m.linkedAt),
        decaySteps: m.decaySteps,
        accessCount: m.accessCount,
        lastAccessedAt: dateOrNull(m.lastAccessedAt),
        createdAt: date(m.createdAt),
        updatedAt: date(m.updatedAt),
      })),
    }),
  );
  await inBatches(
    doc.memories.flatMap((m) => m.sourceEpisodeIds.map((episodeId) => ({ scopeId, memoryId: m.id, episodeId }))),
    (batch) => tx.memorySource.createMany({ data: batch }),
  );
  await inBatches(doc.memoryLinks, (batch) =>
    tx.memoryLink.createMany({
      data: batch.map((l) => ({ id: l.id, scopeId, fromId: l.fromId, toId: l.toId, kind: l.kind, score: l.score, reason: l.reason, createdAt: date(l.createdAt) })),
    }),
  );
  await inBatches(doc.entities, (batch) =>
    tx.entity.createMany({
      data: batch.map((e) => ({
        id: e.id,
        scopeId,
        key: e.key,
        name: e.name,
        kind: e.kind,
        attributes: nullableJson(e.attributes),
        favorability: e.favorability,
        interactionCount: e.interactionCount,
        createdAt: date(e.createdAt),
        updatedAt: date(e.updatedAt),
      })),
    }),
  );
  await inBatches(
    doc.entities.flatMap((e) =>
      e.observations.map((o) => ({ id: o.id, scopeId, entityId: e.id, episodeId: o.episodeId, content: o.content, consolidated: o.consolidated, createdAt: date(o.createdAt) })),
    ),
    (batch) => tx.entityObservation.createMany({ data: batch }),
  );
  await inBatches(doc.digests, (batch) =>
    tx.digest.createMany({
      data: batch.map((d) => ({
        id: d.id,
        scopeId,
        periodStart: date(d.periodStart),
        periodEnd: date(d.periodEnd),
        content: d.content,
        items: requiredJson(d.items),
        status: d.status,
        attempts: d.attempts,
        sentAt: dateOrNull(d.sentAt),
        createdAt: date(d.createdAt),
      })),
    }),
  );
  await inBatches(doc.sleepRuns, (batch) =>
    tx.sleepRun.createMany({
      data: batch.map((r) => ({
        id: r.id,
        scopeId,
        kind: r.kind,
        status: r.status,
        startedAt: date(r.startedAt),
        finishedAt: dateOrNull(r.finishedAt),
        episodeCount: r.episodeCount,
        llmCalls: r.llmCalls,
        inputTokens: r.inputTokens,
        outputTokens: r.outputTokens,
        stats: nullableJson(r.stats),
        error: r.error,
      })),
    }),
  );
  await inBatches(doc.auditEvents, (batch) =>
    tx.auditEvent.createMany({
      data: batch.map((a) => ({
        id: a.id,
        scopeId,
        runId: a.runId,
        action: a.action,
        subjectType: a.subjectType,
        subjectId: a.subjectId,
        before: nullableJson(a.before),
        after: nullableJson(a.after),
        reason: a.reason,
        createdAt: date(a.createdAt),
      })),
    }),
  );
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * The document with a new id for the scope and every row, and every reference (including ids
 * quoted inside JSON documents such as audit states and digest items) following. Texts people
 * wrote (contents, summaries, the soul) are left as they are.
 */
export function withNewIds(doc: ScopeExport): ScopeExport {
  const ids = new Map<string, string>();
  const fresh = (old: string): string => {
    let next = ids.get(old);
    if (!next) ids.set(old, (next = uuidv7()));
    return next;
  };
  // Old ids in document order (sorted by id), so the new ids keep the same relative order.
  fresh(doc.scope.id);
  for (const rows of [doc.conversations, doc.episodes, doc.memories, doc.memoryLinks, doc.entities, doc.digests, doc.sleepRuns, doc.auditEvents]) {
    for (const row of rows) fresh(row.id);
  }
  for (const entity of doc.entities) for (const o of entity.observations) fresh(o.id);

  const map = (value: string): string => ids.get(value) ?? value;
  const mapNullable = (value: string | null): string | null => (value === null ? null : map(value));
  const mapJson = (value: JsonValue | null): JsonValue | null => {
    if (typeof value === 'string') return value.replace(UUID, (match) => ids.get(match) ?? match);
    if (Array.isArray(value)) return value.map((item) => mapJson(item));
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapJson(v as JsonValue)]));
    return value;
  };
  return {
    ...doc,
    scope: { ...doc.scope, id: map(doc.scope.id), settings: mapJson(doc.scope.settings) },
    profile: doc.profile ? { ...doc.profile, data: mapJson(doc.profile.data) } : null,
    conversations: doc.conversations.map((c) => ({ ...c, id: map(c.id), state: mapJson(c.state) })),
    episodes: doc.episodes.map((e) => ({ ...e, id: map(e.id), conversationId: mapNullable(e.conversationId), metadata: mapJson(e.metadata) })),
    memories: doc.memories.map((m) => ({ ...m, id: map(m.id), supersededById: mapNullable(m.supersededById), sourceEpisodeIds: m.sourceEpisodeIds.map(map) })),
    memoryLinks: doc.memoryLinks.map((l) => ({ ...l, id: map(l.id), fromId: map(l.fromId), toId: map(l.toId) })),
    entities: doc.entities.map((e) => ({
      ...e,
      id: map(e.id),
      attributes: mapJson(e.attributes),
      observations: e.observations.map((o) => ({ ...o, id: map(o.id), episodeId: mapNullable(o.episodeId) })),
    })),
    digests: doc.digests.map((d) => ({ ...d, id: map(d.id), items: mapJson(d.items) })),
    sleepRuns: doc.sleepRuns.map((r) => ({ ...r, id: map(r.id), stats: mapJson(r.stats) })),
    auditEvents: doc.auditEvents.map((a) => ({
      ...a,
      id: map(a.id),
      runId: mapNullable(a.runId),
      subjectId: mapNullable(a.subjectId),
      before: mapJson(a.before),
      after: mapJson(a.after),
    })),
  };
}

/** Rows of a scope in the tables an import writes to (an import needs them all empty). */
async function rowsInScope(prisma: PrismaClient, scopeId: string): Promise<number> {
  const where = { where: { scopeId } };
  const counts = await Promise.all([
    prisma.profile.count(where),
    prisma.conversation.count(where),
    prisma.episode.count(where),
    prisma.memory.count(where),
    prisma.entity.count(where),
    prisma.digest.count(where),
    prisma.sleepRun.count(where),
    prisma.auditEvent.count(where),
  ]);
  return counts.reduce((a, b) => a + b, 0);
}

function conflict(message: string, hint: string, cause?: unknown): AppError {
  return new ValidationError(message, { code: 'import.conflict', hint, cause });
}

/**
 * Validates `value` and imports it as one scope, in one transaction. Throws
 * `import.invalid_document` (bad document) or `import.conflict` (the scope has data, or ids are
 * taken); in both cases nothing was written.
 */
export async function importScope(prisma: PrismaClient, value: unknown, options: ImportOptions = {}): Promise<ImportResult> {
  const mode = options.mode ?? 'exact';
  const parsed = parseScopeExport(value);
  const key = options.scopeKey ?? parsed.scope.key;
  if (key.trim() === '') throw new ValidationError('A scope key cannot be empty.', { code: 'import.invalid_key' });
  const doc = mode === 'copy' ? withNewIds(parsed) : parsed;

  const existing = await prisma.scope.findUnique({ where: { key } });
  if (existing && (await rowsInScope(prisma, existing.id)) > 0) {
    throw conflict(`The scope "${key}" already has data; an import only fills an empty scope.`, 'Import under a new key: `npm run cli -- import-scope FILE --as NEW_KEY`.');
  }
  if (!existing) {
    const sameId = await prisma.scope.findUnique({ where: { id: doc.scope.id } });
    if (sameId) {
      throw conflict(
        `This database already holds the exported scope (id ${doc.scope.id}) under the key "${sameId.key}".`,
        'Import a copy with new ids under another key: `npm run cli -- import-scope FILE --as NEW_KEY`.',
      );
    }
  }
  const scopeId = existing?.id ?? doc.scope.id;
  try {
    await prisma.$transaction((tx) => insertScope(tx, doc, { scopeId, scopeKey: key, scopeExists: existing !== null }), IMPORT_TRANSACTION);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'P2002') {
      throw conflict(
        'Rows of this export (the same ids) are already in this database; nothing was imported.',
        'Import a copy with new ids under another key: `npm run cli -- import-scope FILE --as NEW_KEY`.',
        error,
      );
    }
    throw error;
  }
  return { scopeId, scopeKey: key, mode, counts: countScopeExport(doc) };
}
