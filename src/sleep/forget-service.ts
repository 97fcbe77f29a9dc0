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
 */
import { NotFoundError, ValidationError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { PrismaClient } from '../storage/prisma';
import { queryTerms } from '../storage/full-text';
import { scrubDigests } from './digest';
import { regenerateSoul } from './soul';
import { flushTombstones, writeTombstones } from '../memory/vectors/tombstones';
import type { VectorIndex } from '../memory/vectors/vector-index';
import { forgetMemory, type Tx } from '../memory/memories/memory-writer';

export interface ForgetServiceDeps {
  readonly prisma: PrismaClient;
  readonly index: VectorIndex;
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

  async function chainOf(scopeId: string, memoryId: string): Promise<MemoryMatch[]> {
    const select = { id: true, category: true, content: true, confidence: true, active: true, validTo: true, supersededById: true } as const;
    const root = await prisma.memory.findFirst({ where: { scopeId, id: memoryId }, select });
    if (!root) throw new NotFoundError(`no memory ${memoryId} in this scope`, { code: 'memory.not_found' });
    const chain = new Map([[root.id, root]]);
    let frontier = [root.id];
    while (frontier.length > 0) {
      const ids = [...frontier];
      const pointedTo = [...chain.values()].filter((m) => ids.includes(m.id) && m.supersededById).map((m) => m.supersededById!);
      const related = await prisma.memory.findMany({ where: { scopeId, OR: [{ id: { in: pointedTo } }, { supersededById: { in: ids } }] }, select });
      frontier = [];
      for (const m of related) {
        if (chain.has(m.id)) continue;
        chain.set(m.id, m);
        frontier.push(m.id);
      }
    }
    return [...chain.values()].sort((a, b) => Number(Boolean(a.validTo)) - Number(Boolean(b.validTo))).map(toMatch);
  }

  /** Removes vectors and regenerates the soul after the rows are gone. */
  async function afterRemoval(scopeId: string, removedIds: readonly string[], now: Date): Promise<Pick<ForgetResult, 'vectorsDeleted' | 'soulVersion'>> {
    let vectorsDeleted = true;
    try {
      while ((await flushTombstones(prisma, index, VECTOR_BATCH)) > 0);
    } catch (error) {
      vectorsDeleted = false;
      log.error('forgotten memories are gone from the database; their vectors will be deleted as soon as the vector index answers', { scopeId, count: removedIds.length, error });
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
  async function forgetIds(scopeId: string, ids: readonly string[], options: { reason?: string; strict: boolean }): Promise<ForgetResult> {
    const now = clock();
    const { removed, scrubbed } = await prisma.$transaction(async (tx) => {
      const removed = new Set<string>();
      for (const id of ids) {
        if (removed.has(id)) continue;
        if (!options.strict && !(await tx.memory.findFirst({ where: { scopeId, id }, select: { id: true } }))) continue;
        for (const gone of await forgetMemory(tx, scopeId, id, { now, reason: options.reason })) removed.add(gone);
      }
      if (removed.size === 0) return { removed, scrubbed: 0 };
      await scrubRelatedReasons(tx, scopeId, removed);
      return { removed, scrubbed: await scrubDigests(tx, scopeId, [...removed]) };
    }, TX_OPTIONS);
    const removedIds = [...removed];
    if (removedIds.length === 0) return { removedIds, digestsScrubbed: 0, vectorsDeleted: true, soulVersion: (await prisma.profile.findUnique({ where: { scopeId }, select: { version: true } }))?.version ?? 0 };
    log.info('memories forgotten at the owner\u2019s request', { scopeId, count: removedIds.length, digestsScrubbed: scrubbed });
    return { removedIds, digestsScrubbed: scrubbed, ...(await afterRemoval(scopeId, removedIds, now)) };
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
        confirm: (options = {}) => forgetIds(scopeId, matches.map((m) => m.id), { reason: options.reason, strict: false }),
      };
    },

    async purgeScope(scopeId, options = {}) {
      const now = clock();
      const ids = await prisma.$transaction(async (tx) => {
        const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { id: true } });
        if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
        const ids = (await tx.memory.findMany({ where: { scopeId }, select: { id: true } })).map((m) => m.id);
        if (ids.length === 0) return ids;
        // Supersession references are NoAction foreign keys: break them before the rows go.
        await tx.memory.updateMany({ where: { scopeId }, data: { supersededById: null } });
        await tx.auditEvent.updateMany({ where: { scopeId, subjectType: 'memory', action: { not: 'forget' } }, data: { before: REDACTED, after: REDACTED, reason: null } });
        await tx.memory.deleteMany({ where: { scopeId } });
        await writeTombstones(tx, scopeId, 'memory', ids);
        await scrubDigests(tx, scopeId, ids);
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
