/**
 * A copy of a scope export under new ids, for importing a second copy of a scope into the same
 * database (`import-scope --as NEW_KEY`): every row gets a new id and every reference follows,
 * including ids quoted inside JSON documents. The copy has no owner: the original's owner is
 * who its digests go to, and the copy is bound to nobody until its own chat or user claims it.
 * For the same reason a copy's reminders still to come are cancelled: they stay in its history,
 * but a copy never delivers what the original person asked for (its key names another chat).
 */
import { modelData, SECTION_MODELS } from '../memory/scopes/scope-data-walk';
import { uuidv7 } from '../shared/ids';
import type { JsonValue, ScopeExport } from './scope-document';

/** A UUID anywhere in a string (ids quoted in audit states, digest items, settings). */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

type Doc = ScopeExport;

/**
 * The scope columns a copy does not keep (scope-data-map.ts): the owner, to whom the original's
 * digests are delivered. A copy's digests must not reach the original person's chat.
 */
/** Reminder statuses that would still be delivered: a copy cancels them. */
const STILL_TO_COME: ReadonlySet<string> = new Set(['pending', 'failed', 'sending']);
/** What a copy's reminder that was still to come becomes. */
const CANCELLED_IN_COPY = 'cancelled';

const clearedInCopy = Object.fromEntries(modelData('Scope').clearedInCopy.map((column) => [column, null])) as Partial<Doc['scope']>;

/** Gives each row of a copy its new id and makes every reference follow (see {@link withNewIds}). */
export interface IdMapper {
  scope(s: Doc['scope']): Doc['scope'];
  profile(p: NonNullable<Doc['profile']>): NonNullable<Doc['profile']>;
  conversation(c: Doc['conversations'][number]): Doc['conversations'][number];
  episode(e: Doc['episodes'][number]): Doc['episodes'][number];
  memory(m: Doc['memories'][number]): Doc['memories'][number];
  memoryLink(l: Doc['memoryLinks'][number]): Doc['memoryLinks'][number];
  entity(e: Doc['entities'][number]): Doc['entities'][number];
  digest(d: Doc['digests'][number]): Doc['digests'][number];
  reminder(r: Doc['reminders'][number]): Doc['reminders'][number];
  sleepRun(r: Doc['sleepRuns'][number]): Doc['sleepRuns'][number];
  auditEvent(a: Doc['auditEvents'][number]): Doc['auditEvents'][number];
}

/**
 * The mapper of a copy, from every old id of the document in this order: the scope's, then the
 * rows of conversations, episodes, memories, memoryLinks, entities, digests, reminders, sleepRuns and
 * auditEvents, then every entity's observations (document order within each). New ids are
 * drawn in that order, so they keep the same relative order. The streamed import collects the
 * ids in a first pass and maps each row as it reads it again.
 */
export function createIdMapper(oldIds: Iterable<string>): IdMapper {
  const ids = new Map<string, string>();
  for (const old of oldIds) if (!ids.has(old)) ids.set(old, uuidv7());
  const map = (value: string): string => ids.get(value) ?? value;
  const mapNullable = (value: string | null): string | null => (value === null ? null : map(value));
  const mapJson = (value: JsonValue | null): JsonValue | null => {
    if (typeof value === 'string') return value.replace(UUID, (match) => ids.get(match) ?? match);
    if (Array.isArray(value)) return value.map((item) => mapJson(item));
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapJson(v as JsonValue)]));
    return value;
  };
  return {
    scope: (s) => ({ ...s, ...clearedInCopy, id: map(s.id), settings: mapJson(s.settings) }),
    profile: (p) => ({ ...p, data: mapJson(p.data) }),
    conversation: (c) => ({ ...c, id: map(c.id), state: mapJson(c.state) }),
    episode: (e) => ({ ...e, id: map(e.id), conversationId: mapNullable(e.conversationId), metadata: mapJson(e.metadata) }),
    memory: (m) => ({ ...m, id: map(m.id), supersededById: mapNullable(m.supersededById), sourceEpisodeIds: m.sourceEpisodeIds.map(map) }),
    memoryLink: (l) => ({ ...l, id: map(l.id), fromId: map(l.fromId), toId: map(l.toId) }),
    entity: (e) => ({
      ...e,
      id: map(e.id),
      attributes: mapJson(e.attributes),
      observations: e.observations.map((o) => ({ ...o, id: map(o.id), episodeId: mapNullable(o.episodeId) })),
    }),
    digest: (d) => ({ ...d, id: map(d.id), items: mapJson(d.items) as JsonValue }),
    reminder: (r) => ({ ...r, id: map(r.id), status: STILL_TO_COME.has(r.status) ? CANCELLED_IN_COPY : r.status }),
    sleepRun: (r) => ({ ...r, id: map(r.id), stats: mapJson(r.stats) }),
    auditEvent: (a) => ({
      ...a,
      id: map(a.id),
      runId: mapNullable(a.runId),
      subjectId: mapNullable(a.subjectId),
      before: mapJson(a.before),
      after: mapJson(a.after),
    }),
  };
}

/** Every old id of `doc` in the order {@link createIdMapper} takes them. */
function oldIdsOf(doc: ScopeExport): string[] {
  const out = [doc.scope.id];
  for (const { exportPlace } of SECTION_MODELS) for (const row of doc[exportPlace.section]) out.push(row.id);
  for (const entity of doc.entities) for (const o of entity.observations) out.push(o.id);
  return out;
}

/**
 * The document with a new id for the scope and every row, and every reference (including ids
 * quoted inside JSON documents such as audit states and digest items) following. Texts people
 * wrote (contents, summaries, the soul) are left as they are.
 */
export function withNewIds(doc: ScopeExport): ScopeExport {
  const m = createIdMapper(oldIdsOf(doc));
  return {
    ...doc,
    scope: m.scope(doc.scope),
    profile: doc.profile ? m.profile(doc.profile) : null,
    conversations: doc.conversations.map(m.conversation),
    episodes: doc.episodes.map(m.episode),
    memories: doc.memories.map(m.memory),
    memoryLinks: doc.memoryLinks.map(m.memoryLink),
    entities: doc.entities.map(m.entity),
    digests: doc.digests.map(m.digest),
    reminders: doc.reminders.map(m.reminder),
    sleepRuns: doc.sleepRuns.map(m.sleepRun),
    auditEvents: doc.auditEvents.map(m.auditEvent),
  };
}
