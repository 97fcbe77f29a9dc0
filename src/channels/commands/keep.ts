/**
 * `/keep N`: the person says which side of a contradiction is true. N is an item of the list
 * they saw last (the digest's "Which is true?" section, usually; a /memories number works too),
 * and the memory behind it wins every open conflict it is in: the other side is superseded
 * through the memory writer, audited, and the soul rebuilt (conflict-book.ts). Telegram's
 * buttons under the digest call {@link keepMemory} with the memory the button names.
 */
import type { ConflictBook, KeepResult } from '../../memory/memories/conflict-book';
import { excerpt, type CommandScope } from './command-scope';
import { lookupNumber, type NumberSources } from './numbered-lists';

const MAX_EXCERPT = 160;

/** The answer to a bare `/keep`. */
export const KEEP_USAGE = 'Tell me which is true: /keep 3 keeps item 3 of the “Which is true?” questions in your latest digest and sets the other side aside.';

/** The audit reason of a conflict settled in `where` (`Telegram`, `the terminal`). */
export function keepReason(where: string): string {
  return `the owner said which is true with /keep in ${where}`;
}

/** What `/keep <argument>` asks for: nothing (usage) or a number (`3`, `#3`). */
export function parseKeepArgument(argument: string): { kind: 'usage' } | { kind: 'number'; n: number } {
  const trimmed = argument.trim();
  return /^#?\d{1,6}$/.test(trimmed) ? { kind: 'number', n: Number(trimmed.replace('#', '')) } : { kind: 'usage' };
}

function answerOf(result: KeepResult, label: string): string {
  if (!result.kept) return `${label} is not in an open conflict (it may have been settled already). Nothing changed.`;
  const aside = result.setAside.map((m) => `• ${excerpt(m.content, MAX_EXCERPT)}`);
  return [`Noted: “${excerpt(result.kept.content, MAX_EXCERPT)}” is what I keep. I set aside as no longer true:`, ...aside].join('\n');
}

/** Keeps `memoryId` over the other side of its open conflicts; returns the answer to show. */
export async function keepMemory(conflicts: Pick<ConflictBook, 'keep'>, scope: CommandScope, memoryId: string, where: string, label = 'That'): Promise<string> {
  return answerOf(await conflicts.keep(scope.id, memoryId, { reason: keepReason(where), now: new Date() }), label);
}

/** `/keep N`: item N of the list the person saw last. */
export async function answerKeep(
  params: NumberSources & { conflicts: Pick<ConflictBook, 'keep'>; scope: CommandScope; argument: string; where: string },
): Promise<string> {
  const request = parseKeepArgument(params.argument);
  if (request.kind === 'usage') return KEEP_USAGE;
  const found = await lookupNumber(params, params.scope.id, request.n);
  if (!found.found) return found.explanation;
  return keepMemory(params.conflicts, params.scope, found.memoryId, params.where, `Item ${request.n}`);
}
