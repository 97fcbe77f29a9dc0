/**
 * Forgetting at the owner's request (seed 000 privacy, seed 001 purge): unlike decay, which only
 * fades a memory, forgetting removes what was said from everywhere the service keeps it.
 *
 * One memory is forgotten with its whole supersession chain (the old and new versions are the
 * same knowledge). In one transaction: the rows go (links, sources and full-text rows with them),
 * the audit keeps a 'forget' event without the text, and the digests that listed it are
 * rewritten. Then the vectors are deleted and the soul is regenerated, so the text survives
 * neither in the vector index nor in the profile. The vector index and the soul are outside the
 * transaction: a failure there is logged and reported in the result (the soul is then removed
 * rather than left holding the text), never rolled back into keeping the memory.
 *
 * The same transaction reaches the copies outside the memory rows (see {@link redactDerived}):
 * the messages the memory was learned from and the agent's replies to them, the agent's replies
 * whose prompt showed the memory, the entity observations taken from those messages, the active
 * goals kept in a conversation's working state, and a running summary that compacted one of
 * those messages. Forgetting by words also reaches entity observations, attributes and names
 * holding every word. After the commit the full-text index drops what the deleted rows left in
 * its segments, so the words leave the database files too.
 */
import { createHash } from 'node:crypto';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { Prisma, PrismaClient } from '../../storage/prisma';
import { queryTerms, type FullTextIndex } from '../../storage/full-text';
import { scrubDigests } from '../digests/digest';
import { regenerateSoul } from '../profiles/soul';
import { flushTombstones, writeTombstones } from '../vectors/tombstones';
import type { VectorIndex } from '../vectors/vector-index';
import { forgetMemory } from '../memories/memory-writer';

export interface ForgetServiceDeps {
  readonly prisma: PrismaClient;
  readonly index: VectorIndex;
  /** When given, what deleted rows left inside the full-text index is purged after each forget. */
  readonly fullText?: Pick<FullTextIndex, 'purgeDeleted'>;
  readonly logger: Logger;
  readonly clock?: () => Date;
}

/** A memory shown before it is forgotten. */
export interface MemoryMatch {
  readonly id: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  /** active | faded | superseded */
  readonly state: 'active' | 'faded' | 'superseded';
}

export interface ForgetResult {
  /** Every memory row removed (chains included). */
  readonly removedIds: string[];
  /** Episodes whose text was replaced by {@link FORGOTTEN_TEXT} (sources, replies to them, replies that showed the memory). */
  readonly episodesRedacted: number;
  /** Digests whose items were rewritten. */
  readonly digestsScrubbed: number;
  /** False when the vector index could not be updated (logged; search ignores vectors of missing rows). */
  readonly vectorsDeleted: boolean;
  /** The soul's version afterwards; null when it could not be regenerated and was removed instead. */
  readonly soulVersion: number | null;
}

/** What `forgetMatching` found; nothing is removed until `confirm()`. */
export interface ForgetPreview {
  /** The words that had to match (lower-cased, stopwords dropped). */
  readonly terms: string[];
  readonly matches: MemoryMatch[];
  /** Forgets exactly the previewed memories (and their chains); ones already gone are skipped. */
  confirm(options?: { reason?: string }): Promise<ForgetResult>;
}

export interface ForgetService {
  /** The memories `forgetMemory` would remove: the memory and its supersession chain. */
  preview(scopeId: string, memoryId: string): Promise<MemoryMatch[]>;
  forgetMemory(scopeId: string, memoryId: string, options?: { reason?: string }): Promise<ForgetResult>;
  /** Memories (of any state) whose text contains every word, for the owner to confirm. */
  forgetMatching(scopeId: string, words: string): Promise<ForgetPreview>;
  /** Removes every memory of the scope (seed 001 purge); returns how many. */
  purgeScope(scopeId: string, options?: { reason?: string }): Promise<number>;
}

const REDACTED = { redacted: true };
const VECTOR_BATCH = 500;
const TX_OPTIONS = { maxWait: 10_000, timeout: 60_000 };

/** What a redacted episode says instead of its text (its row, time, author and turn stay). */
export const FORGOTTEN_TEXT = '[forgotten at the owner\u2019s request]';
const FORGOTTEN_HASH = createHash('sha256').update(FORGOTTEN_TEXT).digest('hex');

type Tx = Prisma.TransactionClient;
type Db = Tx | PrismaClient;

function stateOf(m: { active: boolean; validTo: Date | null }): MemoryMatch['state'] {
  return m.validTo ? 'superseded' : m.active ? 'active' : 'faded';
}

function toMatch(m: { id: string; category: string; content: string; confidence: number; active: boolean; validTo: Date | null }): MemoryMatch {
  return { id: m.id, category: m.category, content: m.content, confidence: m.confidence, state: stateOf(m) };
}

/** Whole-word match, allowing a plural ("dog" finds "dogs"). */
function containsWord(words: ReadonlySet<string>, term: string): boolean {
  return words.has(term) || words.has(`${term}s`) || words.has(`${term}es`);
}

/** Whether `text` holds every term (whole words, plurals allowed), as `forgetMatching` matches. */
function holdsAll(text: string, terms: readonly string[]): boolean {
  const present = new Set(text.normalize('NFC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  return terms.length > 0 && terms.every((term) => containsWord(present, term));
}

function jsonObject(value: Prisma.JsonValue | null): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** What the removed memories were, read before their rows go. */
interface Removal {
  /** Every memory id that goes (chains included). */
  readonly ids: ReadonlySet<string>;
  /** Their texts (a conversation's working state may hold them verbatim, as active goals). */
  readonly contents: ReadonlySet<string>;
  /** The episodes they were learned from. */
  readonly sourceEpisodeIds: ReadonlySet<string>;
  /** When the oldest of them was created: no reply before it can have been shown one. */
  readonly since: Date | null;
}

async function describeRemoval(tx: Tx, scopeId: string, ids: readonly string[]): Promise<Removal> {
  const [memories, sources] = await Promise.all([
    tx.memory.findMany({ where: { scopeId, id: { in: [...ids] } }, select: { content: true, createdAt: true } }),
    tx.memorySource.findMany({ where: { scopeId, memoryId: { in: [...ids] } }, select: { episodeId: true } }),
  ]);
  const since = memories.reduce<Date | null>((min, m) => (min === null || m.createdAt < min ? m.createdAt : min), null);
  return { ids: new Set(ids), contents: new Set(memories.map((m) => m.content)), sourceEpisodeIds: new Set(sources.map((s) => s.episodeId)), since };
}

/**
 * The copies of forgotten memories outside their rows, removed in the forgetting transaction:
 *
 * - episodes: the messages the memories were learned from, the agent's replies to those messages
 *   (the agent turns that follow one in its conversation, up to the person's next turn), and the
 *   agent's replies whose prompt showed one of the memories (`metadata.injectedMemoryIds`). Their
 *   text becomes {@link FORGOTTEN_TEXT} (the full-text index follows by its trigger), their summary,
 *   metadata and tags go, their vectors get tombstones (the embedding worker then embeds the
 *   placeholder), and they count as consolidated, so sleep never reads them again;
 * - entity observations taken from those episodes;
 * - conversations: the memories' texts among the active goals of the working state, and a running
 *   summary that compacted one of those episodes (a summary cannot be partly unsaid);
 * - with `terms` (forgetting by words): entity observations, attribute values and entities whose
 *   name hold every word, and the text of the `entity` audit events of the entities changed.
 *
 * Returns how many episodes were redacted.
 */
async function redactDerived(tx: Tx, scopeId: string, removal: Removal, options: { now: Date; terms?: readonly string[] }): Promise<number> {
  const episodes = new Set(removal.sourceEpisodeIds);
  const sources = await tx.episode.findMany({ where: { scopeId, id: { in: [...removal.sourceEpisodeIds] } }, select: { conversationId: true, turn: true } });
  const conversations = [...new Set(sources.map((e) => e.conversationId).filter((c): c is string => c !== null))];
  if (conversations.length > 0) {
    const turns = await tx.episode.findMany({ where: { scopeId, conversationId: { in: conversations }, turn: { not: null } }, select: { id: true, role: true, turn: true, conversationId: true }, orderBy: [{ conversationId: 'asc' }, { turn: 'asc' }] });
    const byConversation = new Map<string, typeof turns>();
    for (const t of turns) byConversation.set(t.conversationId!, [...(byConversation.get(t.conversationId!) ?? []), t]);
    for (const source of sources) {
      if (source.conversationId === null || source.turn === null) continue;
      for (const t of byConversation.get(source.conversationId) ?? []) {
        if (t.turn! <= source.turn) continue;
        if (t.role === 'user') break;
        episodes.add(t.id);
      }
    }
  }
  if (removal.since) {
    const replies = await tx.episode.findMany({ where: { scopeId, role: 'agent', timestamp: { gte: removal.since } }, select: { id: true, metadata: true } });
    for (const r of replies) {
      const shown = jsonObject(r.metadata).injectedMemoryIds;
      if (Array.isArray(shown) && shown.some((id) => typeof id === 'string' && removal.ids.has(id))) episodes.add(r.id);
    }
  }
  const ids = (await tx.episode.findMany({ where: { scopeId, id: { in: [...episodes] }, NOT: { content: FORGOTTEN_TEXT } }, select: { id: true } })).map((e) => e.id);
  if (ids.length > 0) {
    await tx.episode.updateMany({ where: { scopeId, id: { in: ids }, consolidatedAt: null }, data: { consolidatedAt: options.now } });
    await tx.episode.updateMany({ where: { scopeId, id: { in: ids } }, data: { content: FORGOTTEN_TEXT, summary: null, metadata: { forgotten: true }, contentHash: FORGOTTEN_HASH, embeddedWith: null, consolidated: true } });
    await tx.episodeTag.deleteMany({ where: { scopeId, episodeId: { in: ids } } });
    const tombstoned = new Set((await tx.vectorTombstone.findMany({ where: { id: { in: ids } }, select: { id: true } })).map((t) => t.id));
    await writeTombstones(tx, scopeId, 'episode', ids.filter((id) => !tombstoned.has(id)));
  }
  // Every episode reached (also those redacted by an earlier forget) for what hangs on them.
  const reached = [...episodes];
  if (reached.length > 0) await tx.entityObservation.deleteMany({ where: { scopeId, episodeId: { in: reached } } });

  // Working state and running summaries of the conversations (ended ones keep theirs too).
  const states = await tx.conversation.findMany({ where: { scopeId }, select: { id: true, state: true, summary: true } });
  if (states.length > 0) {
    const inConversation = await tx.episode.findMany({ where: { scopeId, id: { in: reached }, conversationId: { in: states.map((c) => c.id) } }, select: { id: true, conversationId: true } });
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

  if (options.terms && options.terms.length > 0) await forgetEntityWords(tx, scopeId, options.terms);
  return ids.length;
}

/** Forgetting by words: entity observations, attribute values and entities whose name hold every word. */
async function forgetEntityWords(tx: Tx, scopeId: string, terms: readonly string[]): Promise<void> {
  const observations = await tx.entityObservation.findMany({ where: { scopeId }, select: { id: true, content: true } });
  const gone = observations.filter((o) => holdsAll(o.content, terms)).map((o) => o.id);
  if (gone.length > 0) await tx.entityObservation.deleteMany({ where: { scopeId, id: { in: gone } } });
  const entities = await tx.entity.findMany({ where: { scopeId }, select: { id: true, name: true, key: true, attributes: true } });
  const changed: string[] = [];
  for (const e of entities) {
    if (holdsAll(`${e.name} ${e.key}`, terms)) {
      await tx.entity.delete({ where: { id: e.id } });
      changed.push(e.id);
      continue;
    }
    const attributes = jsonObject(e.attributes);
    const kept = Object.fromEntries(Object.entries(attributes).filter(([key, value]) => !holdsAll(`${key} ${typeof value === 'string' ? value : JSON.stringify(value)}`, terms)));
    if (Object.keys(kept).length !== Object.keys(attributes).length) {
      await tx.entity.update({ where: { id: e.id }, data: { attributes: kept as Prisma.InputJsonObject } });
      changed.push(e.id);
    }
  }
  if (changed.length > 0) await tx.auditEvent.updateMany({ where: { scopeId, subjectType: 'entity', subjectId: { in: changed } }, data: { before: REDACTED, after: REDACTED, reason: null } });
}

/**
 * Audit events about *other* memories can still name a forgotten one (a contradiction, a link),
 * with a model-written reason that may paraphrase it: those reasons go too.
 */
async function scrubRelatedReasons(tx: Tx, scopeId: string, removed: ReadonlySet<string>): Promise<void> {
  const events = await tx.auditEvent.findMany({
    where: { scopeId, subjectType: 'memory', action: { in: ['contradict', 'link'] }, reason: { not: null } },
    select: { id: true, after: true },
  });
  const ids = events
    .filter((e) => {
      const after = e.after && typeof e.after === 'object' && !Array.isArray(e.after) ? (e.after as Record<string, unknown>) : {};
      return [after.contradictedBy, after.to].some((ref) => typeof ref === 'string' && removed.has(ref));
    })
    .map((e) => e.id);
  if (ids.length > 0) await tx.auditEvent.updateMany({ where: { id: { in: ids } }, data: { reason: null } });
}

export function createForgetService(deps: ForgetServiceDeps): ForgetService {
  const { prisma, index } = deps;
  const log = deps.logger.child({ component: 'forget' });
  const clock = deps.clock ?? (() => new Date());

  async function chainOf(scopeId: string, memoryId: string, db: Db = prisma): Promise<MemoryMatch[]> {
    const select = { id: true, category: true, content: true, confidence: true, active: true, validTo: true, supersededById: true } as const;
    const root = await db.memory.findFirst({ where: { scopeId, id: memoryId }, select });
    if (!root) throw new NotFoundError(`no memory ${memoryId} in this scope`, { code: 'memory.not_found' });
    const chain = new Map([[root.id, root]]);
    let frontier = [root.id];
    while (frontier.length > 0) {
      const ids = [...frontier];
      const pointedTo = [...chain.values()].filter((m) => ids.includes(m.id) && m.supersededById).map((m) => m.supersededById!);
      const related = await db.memory.findMany({ where: { scopeId, OR: [{ id: { in: pointedTo } }, { supersededById: { in: ids } }] }, select });
      frontier = [];
      for (const m of related) {
        if (chain.has(m.id)) continue;
        chain.set(m.id, m);
        frontier.push(m.id);
      }
    }
    return [...chain.values()].sort((a, b) => Number(Boolean(a.validTo)) - Number(Boolean(b.validTo))).map(toMatch);
  }

  /** Removes vectors, purges the full-text index and regenerates the soul after the rows are gone. */
  async function afterRemoval(scopeId: string, removedIds: readonly string[], now: Date): Promise<Pick<ForgetResult, 'vectorsDeleted' | 'soulVersion'>> {
    let vectorsDeleted = true;
    try {
      while ((await flushTombstones(prisma, index, VECTOR_BATCH)) > 0);
    } catch (error) {
      vectorsDeleted = false;
      log.error('forgotten memories are gone from the database; their vectors will be deleted as soon as the vector index answers', { scopeId, count: removedIds.length, error });
    }
    try {
      await deps.fullText?.purgeDeleted();
    } catch (error) {
      // Not findable any more (the rows are gone); only the index's segments still hold the words until the next purge.
      log.error('could not purge the full-text index after forgetting; the words leave its segments at the next forget or merge', { scopeId, error });
    }
    let soulVersion: number | null;
    try {
      soulVersion = (await regenerateSoul(prisma, scopeId, { now })).version;
    } catch (error) {
      // A soul that may still quote the forgotten memory must not stay: remove it; the next sleep rebuilds it.
      log.error('the soul could not be regenerated after forgetting; it was removed instead', { scopeId, error });
      await prisma.profile.deleteMany({ where: { scopeId } });
      soulVersion = null;
    }
    return { vectorsDeleted, soulVersion };
  }

  /** Forgets `ids` (each with its chain) in one transaction; `strict` makes a missing id an error. */
  async function forgetIds(scopeId: string, ids: readonly string[], options: { reason?: string; strict: boolean; terms?: readonly string[] }): Promise<ForgetResult> {
    const now = clock();
    const { removed, scrubbed, redacted } = await prisma.$transaction(async (tx) => {
      const roots: string[] = [];
      const chains = new Set<string>();
      for (const id of ids) {
        if (chains.has(id)) continue;
        const chain = await chainOf(scopeId, id, tx).catch((error: unknown) => {
          if (error instanceof NotFoundError && !options.strict) return [];
          throw error;
        });
        if (chain.length === 0) continue;
        roots.push(id);
        for (const m of chain) chains.add(m.id);
      }
      if (chains.size === 0) return { removed: chains, scrubbed: 0, redacted: 0 };
      // Read before the rows go: sources cascade with them.
      const removal = await describeRemoval(tx, scopeId, [...chains]);
      const removed = new Set<string>();
      for (const id of roots) {
        if (removed.has(id)) continue;
        for (const gone of await forgetMemory(tx, scopeId, id, { now, reason: options.reason })) removed.add(gone);
      }
      await scrubRelatedReasons(tx, scopeId, removed);
      const scrubbed = await scrubDigests(tx, scopeId, [...removed]);
      const redacted = await redactDerived(tx, scopeId, removal, { now, terms: options.terms });
      return { removed, scrubbed, redacted };
    }, TX_OPTIONS);
    const removedIds = [...removed];
    if (removedIds.length === 0) return { removedIds, episodesRedacted: 0, digestsScrubbed: 0, vectorsDeleted: true, soulVersion: (await prisma.profile.findUnique({ where: { scopeId }, select: { version: true } }))?.version ?? 0 };
    log.info('memories forgotten at the owner\u2019s request', { scopeId, count: removedIds.length, digestsScrubbed: scrubbed, episodesRedacted: redacted });
    return { removedIds, episodesRedacted: redacted, digestsScrubbed: scrubbed, ...(await afterRemoval(scopeId, removedIds, now)) };
  }

  return {
    preview: chainOf,

    forgetMemory(scopeId, memoryId, options = {}) {
      return forgetIds(scopeId, [memoryId], { reason: options.reason, strict: true });
    },

    async forgetMatching(scopeId, words) {
      const terms = queryTerms(words);
      if (terms.length === 0) throw new ValidationError('say which words to forget, e.g. "my ex"', { code: 'forget.no_words' });
      const memories = await prisma.memory.findMany({
        where: { scopeId },
        select: { id: true, category: true, content: true, confidence: true, active: true, validTo: true },
        orderBy: [{ validFrom: 'asc' }, { id: 'asc' }],
      });
      const matches = memories
        .filter((m) => {
          const present = new Set(m.content.normalize('NFC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
          return terms.every((term) => containsWord(present, term));
        })
        .map(toMatch);
      return {
        terms,
        matches,
        confirm: (options = {}) => forgetIds(scopeId, matches.map((m) => m.id), { reason: options.reason, strict: false, terms }),
      };
    },

    async purgeScope(scopeId, options = {}) {
      const now = clock();
      const ids = await prisma.$transaction(async (tx) => {
        const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { id: true } });
        if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
        const ids = (await tx.memory.findMany({ where: { scopeId }, select: { id: true } })).map((m) => m.id);
        if (ids.length === 0) return ids;
        const removal = await describeRemoval(tx, scopeId, ids);
        // Supersession references are NoAction foreign keys: break them before the rows go.
        await tx.memory.updateMany({ where: { scopeId }, data: { supersededById: null } });
        await tx.auditEvent.updateMany({ where: { scopeId, subjectType: { in: ['memory', 'entity'] }, action: { not: 'forget' } }, data: { before: REDACTED, after: REDACTED, reason: null } });
        await tx.memory.deleteMany({ where: { scopeId } });
        await writeTombstones(tx, scopeId, 'memory', ids);
        await scrubDigests(tx, scopeId, ids);
        await redactDerived(tx, scopeId, removal, { now });
        // Everything learned goes, the profiles of people and things too (their observations cascade).
        await tx.entity.deleteMany({ where: { scopeId } });
        await tx.auditEvent.create({
          data: { scopeId, action: 'forget', subjectType: 'scope', subjectId: scopeId, after: { removed: ids.length }, reason: options.reason ?? 'every memory purged at the owner\u2019s request', createdAt: now },
        });
        return ids;
      }, TX_OPTIONS);
      if (ids.length > 0) {
        log.info('scope purged', { scopeId, count: ids.length });
        await afterRemoval(scopeId, ids, now);
      }
      return ids.length;
    },
  };
}
