/**
 * A copy of a scope export under new ids, for importing a second copy of a scope into the same
 * database (`import-scope --as NEW_KEY`): every row gets a new id and every reference follows,
 * including ids quoted inside JSON documents.
 */
import { uuidv7 } from '../shared/ids';
import type { JsonValue, ScopeExport } from './scope-document';

/** A UUID anywhere in a string (ids quoted in audit states, digest items, settings). */
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
