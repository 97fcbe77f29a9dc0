/**
 * The person's (or the operator's) own say over a memory, for every door that offers it: `/fix N`
 * and `/pin N` in the chat channels, the memory page, the CLI and the admin API.
 *
 * - Correct: the person's words become a new version through the memory writer
 *   (`supersedeMemory`: the same content rules every write passes, the old version kept as
 *   superseded history behind a `supersedes` link, so `/why` shows the chain). The new version
 *   keeps the old one's category, subject and evidence (the messages it was learned from) and
 *   has the confidence of a fact the person stated. A faded memory can be corrected: the new
 *   version is current. The soul is rendered again in the same transaction, so no prompt states
 *   the old wording after the answer; the full-text index follows the row (its triggers) and the
 *   embedding worker gives the new row its vector like any other.
 * - Pin: a pinned memory is left alone by decay (sleep/decay.ts) and never evicted by capped mode
 *   (capped-memory.ts). Forgetting still removes it: forget wins.
 *
 * Both are audited (`correct`, `pin`, `unpin`) with who asked and through which door, and both
 * refuse a memory of another scope as "not found", never showing or changing it. What they
 * return passes the output filter.
 */
import { NotFoundError, ValidationError } from '../../shared/errors';
import { redactSecrets } from '../../shared/redact';
import type { Memory, PrismaClient } from '../../storage/prisma';
import { showStoredValue } from '../output-filter';
import { regenerateSoulIn, type SoulOptions } from '../profiles/soul';
import { audit, snapshot } from './memory-audit';
import { checkedContent } from './memory-guards';
import { SOURCE_TRUST, supersedeMemory, type ChangeOrigin } from './memory-writer';

/** Who asked for a correction or a pin, and through which door, for the audit trail. */
export interface CorrectionOrigin {
  /** `person`: the scope's own person (chat, memory page); `operator`: CLI or admin API. */
  readonly by: 'person' | 'operator';
  /** Where they asked: `/fix in Telegram`, `the memory page`, `the admin API`, ... */
  readonly door: string;
  /** When (default: now); a simulated clock passes its own. */
  readonly now?: Date;
}

/** A memory as the catalog hands it out (texts through the output filter). */
export type CorrectedMemory = Memory;

export interface MemoryCorrections {
  /**
   * A new version of the memory with the person's words (the old kept in history, superseded).
   * Refuses empty text, a text holding a secret and every text the writer refuses (ValidationError,
   * nothing changed); a superseded version (`memory.superseded`: correct the current one); an id
   * of another scope is NotFoundError.
   */
  correct(scopeId: string, memoryId: string, content: string, origin: CorrectionOrigin): Promise<CorrectedMemory>;
  /** Pinned memories never decay and are never deactivated by decay or capped-mode eviction. */
  pin(scopeId: string, memoryId: string, pinned: boolean, origin: CorrectionOrigin): Promise<CorrectedMemory>;
}

/**
 * The confidence of what the person states about themselves: they are the authority on it
 * (seed 003 source trust, a `stated` source).
 */
export const CORRECTED_CONFIDENCE = SOURCE_TRUST.stated;

/** The audit reason of a change asked for by `origin`: "corrected by the person (/fix in Telegram)". */
export function correctionReason(verb: string, origin: CorrectionOrigin): string {
  return `${verb} by the ${origin.by} (${origin.door})`;
}

/** The memory `id` of the scope, or "not found" (another scope's id is not told apart from none). */
async function loadMemory(prisma: Pick<PrismaClient, 'memory'>, scopeId: string, id: string): Promise<Memory> {
  const memory = await prisma.memory.findFirst({ where: { scopeId, id } });
  if (!memory) throw new NotFoundError(`no memory ${id} here`, { code: 'memory.not_found' });
  return memory;
}

/** The words of a correction, checked before anything is read or written. */
function correctionText(content: string): string {
  const text = content.trim();
  if (text === '') throw new ValidationError('the new text is empty: write what is true instead', { code: 'memory.empty' });
  // A correction is the person's own words for a memory: one holding a credential is refused whole
  // (rather than kept with a hole in it), and the message never repeats it.
  if (redactSecrets(text) !== text)
    throw new ValidationError('the new text holds what looks like a password, key or token, and I never keep secrets; nothing changed', {
      code: 'memory.secret',
    });
  return checkedContent(text);
}

export function createMemoryCorrections(prisma: PrismaClient, deps: { soul: Omit<SoulOptions, 'now' | 'runId'> }): MemoryCorrections {
  return {
    async correct(scopeId, memoryId, content, origin) {
      const text = correctionText(content);
      const now = origin.now ?? new Date();
      const change: ChangeOrigin = { now, reason: correctionReason('corrected', origin), by: 'owner' };
      const corrected = await prisma.$transaction(async (tx) => {
        const before = await loadMemory(tx, scopeId, memoryId);
        if (before.validTo)
          throw new ValidationError('that is an earlier version of a memory, corrected since: correct its current version', { code: 'memory.superseded' });
        if (text === before.content) throw new ValidationError('the memory already says exactly that; nothing changed', { code: 'memory.unchanged' });
        const { current } = await supersedeMemory(tx, scopeId, memoryId, { content: text, confidence: CORRECTED_CONFIDENCE }, change);
        // The evidence stays what it was: the messages the memory was learned from. (They were
        // checked when they were first cited; a correction adds the person's word, not a message.)
        const sources = await tx.memorySource.findMany({ where: { scopeId, memoryId }, select: { episodeId: true } });
        for (const { episodeId } of sources) {
          await tx.memorySource.create({ data: { scopeId, memoryId: current.id, episodeId } });
        }
        const stated = await tx.memory.update({
          where: { id: current.id },
          data: { sourceType: 'stated', sourceTrust: SOURCE_TRUST.stated },
        });
        await audit(tx, scopeId, change, 'correct', current.id, snapshot(before), { ...snapshot(stated), supersedes: memoryId });
        await regenerateSoulIn(tx, scopeId, { ...deps.soul, now });
        return stated;
      });
      return showStoredValue(corrected);
    },

    async pin(scopeId, memoryId, pinned, origin) {
      const now = origin.now ?? new Date();
      const change: ChangeOrigin = { now, reason: correctionReason(pinned ? 'pinned' : 'unpinned', origin) };
      const after = await prisma.$transaction(async (tx) => {
        const before = await loadMemory(tx, scopeId, memoryId);
        if (before.validTo)
          throw new ValidationError('that is an earlier version of a memory, corrected since: pin its current version', { code: 'memory.superseded' });
        if (before.pinned === pinned) return before;
        const updated = await tx.memory.update({ where: { id: before.id }, data: { pinned } });
        await audit(tx, scopeId, change, pinned ? 'pin' : 'unpin', memoryId, { ...snapshot(before), pinned: before.pinned }, { ...snapshot(updated), pinned });
        return updated;
      });
      return showStoredValue(after);
    },
  };
}
