/**
 * The copies of forgotten memories outside their own rows, removed inside the forgetting
 * transaction: the messages they were learned from and the replies to them, replies that quoted
 * them, entity observations taken from those messages with the attributes folded from them and
 * the entity's audit text (and an entity left with nothing of its own), a conversation's working
 * state and running summary, and audit reasons that paraphrase them. Forgetting by words reaches further (forget-words.ts); both redact episodes the same way
 * ({@link redactEpisodes}).
 */
import { createHash } from 'node:crypto';
import type { Prisma } from '../../storage/prisma';
import type { ModelEntry, ScopeModelName, WordColumn } from '../scopes/scope-data-map';
import { isJsonColumn, redactedColumns } from '../scopes/scope-data-walk';
import { writeTombstones } from '../vectors/tombstones';
import { jsonText, quotes } from './text-match';

export type Tx = Prisma.TransactionClient;

/** What a redacted episode says instead of its text (its row, time, author and turn stay). */
export const FORGOTTEN_TEXT = '[forgotten at the owner\u2019s request]';
const FORGOTTEN_HASH = createHash('sha256').update(FORGOTTEN_TEXT).digest('hex');
export const REDACTED = { redacted: true };

/**
 * What the columns forgetting redacts in `model` (scope-data-map.ts) say afterwards: a JSON column
 * the {@link REDACTED} marker, a text column nothing.
 */
export function redactionOf<M extends ScopeModelName>(model: M): Redaction<M> {
  return Object.fromEntries(redactedColumns(model).map((column) => [column, isJsonColumn(model, column) ? REDACTED : null])) as Redaction<M>;
}

/** The update {@link redactionOf} gives: the marker in JSON columns, null in text columns. */
export type Redaction<M extends ScopeModelName> = { [C in WordColumn<M>]?: C extends ModelEntry<M>['json'][number] ? typeof REDACTED : null };

/** The text of a row's `columns` (JSON as its text), one per line: what forgetting by words reads. */
export function columnsText(row: Readonly<Record<string, unknown>>, columns: readonly string[]): string {
  return columns.map((column) => jsonText(row[column])).join('\n');
}

export function jsonObject(value: Prisma.JsonValue | null): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** What the removed memories were, read before their rows go. */
export interface Removal {
  /** Every memory id that goes (chains included). */
  readonly ids: ReadonlySet<string>;
  /** Their texts (a reply or a working state may hold them). */
  readonly contents: ReadonlySet<string>;
  /** The episodes they were learned from. */
  readonly sourceEpisodeIds: ReadonlySet<string>;
  /** When the oldest of them was created: no reply before it can have been shown one. */
  readonly since: Date | null;
}

export async function describeRemoval(tx: Tx, scopeId: string, ids: readonly string[]): Promise<Removal> {
  const memories = await tx.memory.findMany({ where: { scopeId, id: { in: [...ids] } }, select: { content: true, createdAt: true } });
  const sources = await tx.memorySource.findMany({ where: { scopeId, memoryId: { in: [...ids] } }, select: { episodeId: true } });
  const since = memories.reduce<Date | null>((min, m) => (min === null || m.createdAt < min ? m.createdAt : min), null);
  return { ids: new Set(ids), contents: new Set(memories.map((m) => m.content)), sourceEpisodeIds: new Set(sources.map((s) => s.episodeId)), since };
}

/** Whether `text` quotes one of the removed memories, or holds the words being forgotten. */
export function quotesRemoval(text: string, removal: Removal, holds?: (text: string) => boolean): boolean {
  if (holds?.(text)) return true;
  for (const content of removal.contents) if (quotes(text, content)) return true;
  return false;
}

/**
 * Replaces the text of episodes with {@link FORGOTTEN_TEXT}: summary, metadata and tags go, the
 * vectors get tombstones (the embedding worker then embeds the placeholder) and the episodes count
 * as consolidated, so sleep never reads them again. The full-text index follows by its trigger.
 * Episodes already redacted are skipped; returns the ids redacted now.
 */
export async function redactEpisodes(tx: Tx, scopeId: string, episodeIds: Iterable<string>, now: Date): Promise<string[]> {
  const wanted = [...new Set(episodeIds)];
  if (wanted.length === 0) return [];
  const ids = (await tx.episode.findMany({ where: { scopeId, id: { in: wanted }, NOT: { content: FORGOTTEN_TEXT } }, select: { id: true } })).map((e) => e.id);
  if (ids.length === 0) return [];
  await tx.episode.updateMany({ where: { scopeId, id: { in: ids }, consolidatedAt: null }, data: { consolidatedAt: now } });
  await tx.episode.updateMany({
    where: { scopeId, id: { in: ids } },
    data: { content: FORGOTTEN_TEXT, summary: null, metadata: { forgotten: true }, contentHash: FORGOTTEN_HASH, embeddedWith: null, consolidated: true },
  });
  await tx.episodeTag.deleteMany({ where: { scopeId, episodeId: { in: ids } } });
  const tombstoned = new Set((await tx.vectorTombstone.findMany({ where: { id: { in: ids } }, select: { id: true } })).map((t) => t.id));
  await writeTombstones(
    tx,
    scopeId,
    'episode',
    ids.filter((id) => !tombstoned.has(id)),
  );
  return ids;
}

/**
 * The attribute holding an entity's other names (written by consolidation, never by the fold):
 * names the person calls the entity by, not something folded from what they said, so it stays
 * while the entity has evidence left.
 */
const ALIASES_ATTRIBUTE = 'aliases';

/**
 * Deletes entity observations whose evidence is one of `episodeIds`, and what was derived from
 * them. An observation names its message (`episodeId`); the attributes do not name theirs: the
 * fold writes them from the observations it read and marks those consolidated. So an attribute is
 * taken to derive from every observation folded before it: when a folded observation goes, the
 * entity's folded attributes go too (its aliases stay) and its remaining observations are marked
 * unfolded, so the next sleep folds the profile again from the evidence that is left. Observations
 * not folded yet have nothing derived from them.
 *
 * An entity left with no observation at all and no attribute of its own goes: all it was known
 * from is forgotten (its name alone, e.g. "Japanese food", would still say it). Every entity that
 * lost an observation loses the text of its audit events (a fold's snapshots quote the old
 * attributes, a merge names the merged entity); the events themselves stay. Returns the ids of
 * deleted entities.
 */
export async function forgetObservationsOf(tx: Tx, scopeId: string, episodeIds: readonly string[]): Promise<string[]> {
  if (episodeIds.length === 0) return [];
  const onEpisodes = { scopeId, episodeId: { in: [...episodeIds] } };
  const lost = await tx.entityObservation.findMany({ where: onEpisodes, select: { entityId: true, consolidated: true } });
  if (lost.length === 0) return [];
  await tx.entityObservation.deleteMany({ where: onEpisodes });
  const touched = [...new Set(lost.map((o) => o.entityId))];
  const folded = new Set(lost.filter((o) => o.consolidated).map((o) => o.entityId));
  const entities = await tx.entity.findMany({
    where: { scopeId, id: { in: touched } },
    select: { id: true, attributes: true, _count: { select: { observations: true } } },
  });
  const empty: string[] = [];
  for (const e of entities) {
    let attributes = jsonObject(e.attributes);
    if (folded.has(e.id)) {
      const aliases = attributes[ALIASES_ATTRIBUTE];
      attributes = typeof aliases === 'string' ? { [ALIASES_ATTRIBUTE]: aliases } : {};
      await tx.entity.update({ where: { id: e.id }, data: { attributes: attributes as Prisma.InputJsonObject } });
      // Folded again by the next sleep from what is left (sleep/entities.ts folds unconsolidated observations).
      await tx.entityObservation.updateMany({ where: { scopeId, entityId: e.id, consolidated: true }, data: { consolidated: false } });
    }
    const own = Object.keys(attributes).filter((k) => k !== ALIASES_ATTRIBUTE);
    if (e._count.observations === 0 && own.length === 0) empty.push(e.id);
  }
  if (empty.length > 0) await tx.entity.deleteMany({ where: { scopeId, id: { in: empty } } });
  await tx.auditEvent.updateMany({
    where: { scopeId, subjectType: 'entity', subjectId: { in: touched } },
    data: redactionOf('AuditEvent'),
  });
  return empty;
}

/** The agent turns answering each source message: those after it in its conversation, up to the person's next turn. */
async function repliesToSources(tx: Tx, scopeId: string, sourceIds: ReadonlySet<string>): Promise<string[]> {
  const sources = await tx.episode.findMany({ where: { scopeId, id: { in: [...sourceIds] } }, select: { conversationId: true, turn: true } });
  const conversations = [...new Set(sources.map((e) => e.conversationId).filter((c): c is string => c !== null))];
  if (conversations.length === 0) return [];
  const turns = await tx.episode.findMany({
    where: { scopeId, conversationId: { in: conversations }, turn: { not: null } },
    select: { id: true, role: true, turn: true, conversationId: true },
    orderBy: [{ conversationId: 'asc' }, { turn: 'asc' }],
  });
  const out: string[] = [];
  for (const source of sources) {
    if (source.conversationId === null || source.turn === null) continue;
    for (const t of turns) {
      if (t.conversationId !== source.conversationId || t.turn! <= source.turn) continue;
      if (t.role === 'user') break;
      out.push(t.id);
    }
  }
  return out;
}

/**
 * Redacts the copies of removed memories (see the module comment):
 *
 * - episodes: the messages the memories were learned from, the agent's replies to those messages,
 *   and the agent's later replies whose prompt showed one of the memories
 *   (`metadata.injectedMemoryIds`) *and* that quote it (text-match.ts): the soul is shown in every
 *   prompt, so being shown alone does not mean a reply repeated the memory;
 * - entity observations taken from those episodes, what was folded from them and the entity's
 *   audit text ({@link forgetObservationsOf});
 * - conversations: the memories' texts among the active goals of the working state, and a running
 *   summary that compacted one of those episodes (a summary cannot be partly unsaid).
 *
 * `holds` (forgetting by words) also counts a shown reply holding the words as quoting.
 * Returns how many episodes were redacted.
 */
export async function redactDerived(tx: Tx, scopeId: string, removal: Removal, options: { now: Date; holds?: (text: string) => boolean }): Promise<number> {
  const episodes = new Set([...removal.sourceEpisodeIds, ...(await repliesToSources(tx, scopeId, removal.sourceEpisodeIds))]);
  if (removal.since) {
    const replies = await tx.episode.findMany({
      where: { scopeId, role: 'agent', timestamp: { gte: removal.since } },
      select: { id: true, content: true, metadata: true },
    });
    for (const r of replies) {
      const shown = jsonObject(r.metadata).injectedMemoryIds;
      const wasShown = Array.isArray(shown) && shown.some((id) => typeof id === 'string' && removal.ids.has(id));
      if (wasShown && quotesRemoval(r.content, removal, options.holds)) episodes.add(r.id);
    }
  }
  const redacted = await redactEpisodes(tx, scopeId, episodes, options.now);
  // Every episode reached (also those redacted by an earlier forget) for what hangs on them.
  const reached = [...episodes];
  await forgetObservationsOf(tx, scopeId, reached);

  // Working state and running summaries of the conversations (ended ones keep theirs too).
  const states = await tx.conversation.findMany({ where: { scopeId }, select: { id: true, state: true, summary: true } });
  if (states.length > 0) {
    const inConversation = await tx.episode.findMany({
      where: { scopeId, id: { in: reached }, conversationId: { in: states.map((c) => c.id) } },
      select: { id: true, conversationId: true },
    });
    for (const c of states) {
      const state = jsonObject(c.state);
      const data: { state?: Prisma.InputJsonObject; summary?: null } = {};
      if (Array.isArray(state.goals) && state.goals.some((g) => typeof g === 'string' && removal.contents.has(g))) {
        data.state = { ...state, goals: state.goals.filter((g) => !(typeof g === 'string' && removal.contents.has(g))) } as Prisma.InputJsonObject;
      }
      const recent = new Set(Array.isArray(state.recentTurnIds) ? state.recentTurnIds.filter((id): id is string => typeof id === 'string') : []);
      if (c.summary !== null && inConversation.some((e) => e.conversationId === c.id && !recent.has(e.id))) data.summary = null;
      if (data.state || data.summary === null) await tx.conversation.update({ where: { id: c.id }, data });
    }
  }
  return redacted.length;
}

/**
 * Audit events about *other* memories can still name a forgotten one (a contradiction, a link),
 * with a model-written reason that may paraphrase it: those reasons go too.
 */
export async function scrubRelatedReasons(tx: Tx, scopeId: string, removed: ReadonlySet<string>): Promise<void> {
  const events = await tx.auditEvent.findMany({
    where: { scopeId, subjectType: 'memory', action: { in: ['contradict', 'link'] }, reason: { not: null } },
    select: { id: true, after: true },
  });
  const ids = events
    .filter((e) => {
      const after = jsonObject(e.after);
      return [after.contradictedBy, after.to].some((ref) => typeof ref === 'string' && removed.has(ref));
    })
    .map((e) => e.id);
  if (ids.length > 0) await tx.auditEvent.updateMany({ where: { id: { in: ids } }, data: { reason: null } });
}
