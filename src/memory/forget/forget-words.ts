/**
 * Forgetting by words reaches every text Nocturne holds for the scope, not only the memories that
 * matched: any episode holding the words (the person's messages and the agent's replies alike,
 * whether or not a memory was learned from them), the model's summaries, episode metadata and
 * tags, audit text, link reasons, a conversation's working state and summary, and entity
 * profiles (observations, attribute values, names), reminders. "Holding the words" is text-match.ts's
 * `holdsAll`: every word, whole words, plurals allowed.
 */
import type { Prisma } from '../../storage/prisma';
import { redactedColumns } from '../scopes/scope-data-walk';
import { columnsText, FORGOTTEN_TEXT, forgetObservationsOf, jsonObject, redactEpisodes, redactionOf, type Tx } from './redact-derived';
import { forgetReminderWords } from '../reminders/reminder-forget';
import { jsonText } from './text-match';

/** Rows read per query while scanning a scope's episodes and audit events. */
const SCAN_BATCH = 1_000;

type Holds = (text: string) => boolean;

/** The audit columns that can quote the words (scope-data-map.ts): read, and redacted when they do. */
const AUDIT_COLUMNS = redactedColumns('AuditEvent');

/** Every episode of the scope whose text, summary, metadata or tags hold the words. */
export async function episodesHolding(db: Pick<Tx, 'episode'>, scopeId: string, holds: Holds): Promise<{ content: string[]; derived: string[] }> {
  const content: string[] = [];
  const derived: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await db.episode.findMany({
      where: { scopeId, NOT: { content: FORGOTTEN_TEXT } },
      select: { id: true, content: true, summary: true, metadata: true, tags: { select: { value: true } } },
      orderBy: { id: 'asc' },
      take: SCAN_BATCH,
      ...(cursor ? { cursor: { id: cursor }, skip: 1 } : {}),
    });
    for (const e of page) {
      if (holds(e.content)) content.push(e.id);
      else if ((e.summary !== null && holds(e.summary)) || holds(jsonText(e.metadata)) || e.tags.some((t) => holds(t.value))) derived.push(e.id);
    }
    if (page.length < SCAN_BATCH) break;
    cursor = page[page.length - 1]!.id;
  }
  return { content, derived };
}

/** Audit events of the scope whose snapshots or reason hold the words lose that text. */
async function scrubAudit(tx: Tx, scopeId: string, holds: Holds): Promise<void> {
  let cursor: string | undefined;
  const hits: string[] = [];
  for (;;) {
    const page = await tx.auditEvent.findMany({
      where: { scopeId },
      orderBy: { id: 'asc' },
      take: SCAN_BATCH,
      ...(cursor ? { cursor: { id: cursor }, skip: 1 } : {}),
    });
    for (const e of page) if (holds(columnsText(e, AUDIT_COLUMNS))) hits.push(e.id);
    if (page.length < SCAN_BATCH) break;
    cursor = page[page.length - 1]!.id;
  }
  if (hits.length > 0) await tx.auditEvent.updateMany({ where: { id: { in: hits } }, data: redactionOf('AuditEvent') });
  const links = await tx.memoryLink.findMany({ where: { scopeId, reason: { not: null } }, select: { id: true, reason: true } });
  const said = links.filter((l) => holds(l.reason!)).map((l) => l.id);
  if (said.length > 0) await tx.memoryLink.updateMany({ where: { id: { in: said } }, data: redactionOf('MemoryLink') });
}

/** Drops what holds the words from a JSON value: strings, array items, object entries. */
export function withoutWords(value: unknown, holds: Holds): unknown {
  if (typeof value === 'string') return holds(value) ? undefined : value;
  if (Array.isArray(value)) return value.map((v) => withoutWords(v, holds)).filter((v) => v !== undefined);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (holds(k)) continue;
      const kept = withoutWords(v, holds);
      if (kept !== undefined) out[k] = kept;
    }
    return out;
  }
  return value;
}

/** A conversation's working state loses what holds the words; a running summary holding them goes. */
async function scrubConversations(tx: Tx, scopeId: string, holds: Holds): Promise<void> {
  const conversations = await tx.conversation.findMany({ where: { scopeId }, select: { id: true, state: true, summary: true } });
  for (const c of conversations) {
    const data: { state?: Prisma.InputJsonObject; summary?: null } = {};
    if (c.state !== null && holds(jsonText(c.state))) data.state = withoutWords(jsonObject(c.state), holds) as Prisma.InputJsonObject;
    if (c.summary !== null && holds(c.summary)) data.summary = null;
    if (data.state || data.summary === null) await tx.conversation.update({ where: { id: c.id }, data });
  }
}

/** Entity observations, attribute values and entities whose name hold the words. */
async function forgetEntityWords(tx: Tx, scopeId: string, holds: Holds): Promise<void> {
  const observations = await tx.entityObservation.findMany({ where: { scopeId }, select: { id: true, content: true } });
  const gone = observations.filter((o) => holds(o.content)).map((o) => o.id);
  if (gone.length > 0) await tx.entityObservation.deleteMany({ where: { scopeId, id: { in: gone } } });
  const entities = await tx.entity.findMany({ where: { scopeId }, select: { id: true, name: true, key: true, attributes: true } });
  const changed: string[] = [];
  for (const e of entities) {
    if (holds(`${e.name} ${e.key}`)) {
      await tx.entity.delete({ where: { id: e.id } });
      changed.push(e.id);
      continue;
    }
    const attributes = jsonObject(e.attributes);
    const kept = Object.fromEntries(Object.entries(attributes).filter(([key, value]) => !holds(`${key} ${jsonText(value)}`)));
    if (Object.keys(kept).length !== Object.keys(attributes).length) {
      await tx.entity.update({ where: { id: e.id }, data: { attributes: kept as Prisma.InputJsonObject } });
      changed.push(e.id);
    }
  }
  if (changed.length > 0)
    await tx.auditEvent.updateMany({ where: { scopeId, subjectType: 'entity', subjectId: { in: changed } }, data: redactionOf('AuditEvent') });
}

/**
 * Removes the words from everything of the scope besides the memory rows (those go by
 * `forgetMemory`; the soul and digests are rebuilt by the caller in the same transaction).
 * Episodes whose text holds the words are redacted whole, with what hangs on them (entity
 * observations); an episode whose summary, metadata or a tag holds them loses those only.
 * Returns how many episodes were redacted.
 */
export async function forgetWordsEverywhere(tx: Tx, scopeId: string, holds: Holds, now: Date): Promise<number> {
  const { content, derived } = await episodesHolding(tx, scopeId, holds);
  const redacted = await redactEpisodes(tx, scopeId, content, now);
  await forgetObservationsOf(tx, scopeId, content);
  if (derived.length > 0) {
    const rows = await tx.episode.findMany({ where: { scopeId, id: { in: derived } }, select: { id: true, summary: true, metadata: true } });
    for (const e of rows) {
      const data: Prisma.EpisodeUpdateInput = {};
      if (e.summary !== null && holds(e.summary)) data.summary = null;
      if (holds(jsonText(e.metadata))) data.metadata = withoutWords(jsonObject(e.metadata), holds) as Prisma.InputJsonObject;
      await tx.episode.update({ where: { id: e.id }, data });
    }
    const tags = await tx.episodeTag.findMany({ where: { scopeId, episodeId: { in: derived } }, select: { episodeId: true, kind: true, value: true } });
    for (const t of tags.filter((tag) => holds(tag.value)))
      await tx.episodeTag.deleteMany({ where: { scopeId, episodeId: t.episodeId, kind: t.kind, value: t.value } });
  }
  await scrubAudit(tx, scopeId, holds);
  await scrubConversations(tx, scopeId, holds);
  await forgetEntityWords(tx, scopeId, holds);
  await forgetReminderWords(tx, scopeId, holds);
  return redacted.length;
}
