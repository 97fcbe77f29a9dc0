/**
 * `/fix N new text`, `/pin N` and `/unpin N`: the person corrects or pins item N of the list they
 * saw last (numbered-lists.ts, exactly as `/forget N` and `/why N` read their numbers). The
 * domain does the work (memory-corrections.ts: a new version through the guarded writer, the old
 * one kept as history; a pin decay and capped mode respect); this file parses, answers and says
 * why nothing changed when the input is bad (no number, no text, a number not in the list, a
 * secret, a text the writer refuses). In a group, a member reaches only the memories about them,
 * like `/forget`.
 */
import { AppError } from '../../shared/errors';
import { asSentence } from '../../shared/sentence';
import type { MemoryCatalog } from '../../memory/memories/memory-catalog';
import type { CorrectionOrigin, MemoryCorrections } from '../../memory/memories/memory-corrections';
import { excerpt, type CommandScope } from './command-scope';
import { lookupNumber, type NumberSources } from './numbered-lists';

const MAX_EXCERPT = 300;

/** The answer to `/fix` without a number. */
export const FIX_USAGE = 'Tell me what is true instead: /fix 3 Jordi is my husband corrects item 3 of the last /memories list (or digest) you saw.';

/** The answer when correcting is not offered by this process. */
export const CORRECTIONS_UNAVAILABLE_TEXT = 'Correcting and pinning memories is not available here.';

/** The answer to `/pin` or `/unpin` without a number. */
export function pinUsage(pinned: boolean): string {
  return pinned
    ? 'Which one? /pin 3 keeps item 3 of your last /memories list from ever fading (/unpin 3 lets it fade again).'
    : 'Which one? /unpin 3 lets item 3 of your last /memories list fade again like any other memory.';
}

/** What a group member reads when item `n` is about someone else. */
export function notYoursToChangeText(n: number): string {
  return `Item ${n} is about someone else: in a group you can change only what I learned about you (the group’s administrators can change anything). Nothing changed.`;
}

export type FixRequest =
  | { readonly kind: 'usage' }
  | { readonly kind: 'no_text'; readonly n: number }
  | { readonly kind: 'fix'; readonly n: number; readonly text: string };

/** What `/fix <argument>` asks for: nothing usable (usage), a number without text, or both. */
export function parseFixArgument(argument: string): FixRequest {
  const match = /^\s*#?(\d{1,6})(?:\s+([\s\S]*))?$/.exec(argument);
  if (!match) return { kind: 'usage' };
  const n = Number(match[1]);
  const text = (match[2] ?? '').trim();
  return text === '' ? { kind: 'no_text', n } : { kind: 'fix', n, text };
}

/** What `/fix`, `/pin` and `/unpin` read and call: the numbers, the catalog and the corrections. */
export interface FixServices extends NumberSources {
  readonly catalog: Pick<MemoryCatalog, 'explain' | 'isAbout'>;
  /** Absent: the commands say correcting is not available. */
  readonly corrections?: Pick<MemoryCorrections, 'correct' | 'pin'>;
}

/** Who is asking: the scope, the channel (`Telegram`, `the terminal`) and, in a group, the member. */
export interface FixAsker {
  readonly scope: CommandScope;
  readonly where: string;
  /** A group member who is not an administrator: reaches only the memories about them. */
  readonly speakerId?: string;
}

/**
 * What a person reads when their words start with "I" or "my": the writer reads those as about the
 * assistant (persona protection), while the person meant themselves; the way through is their name.
 */
export const FIRST_PERSON_TEXT =
  'I keep memories about you in the third person, and text starting with “I” or “my” reads as about me: write it with your name or the other person’s (/fix 2 Jordi is Ana’s husband). Nothing changed.';

/** A refusal from the domain as the person reads it, or the error again when it is not theirs. */
function refusal(error: unknown): string {
  if (error instanceof AppError && error.code === 'memory.about_assistant') return FIRST_PERSON_TEXT;
  if (error instanceof AppError && error.category === 'user') {
    const text = asSentence(error.message);
    return /nothing changed\.?$/i.test(text) ? `${text.replace(/\.?$/, '')}.` : `${text.replace(/\.?$/, '')}. Nothing changed.`;
  }
  throw error;
}

/** Item `n` of the last list, checked against the asker's reach; a string is the answer to give instead. */
async function memoryOf(services: FixServices, asker: FixAsker, n: number): Promise<string | { memoryId: string }> {
  const found = await lookupNumber(services, asker.scope.id, n);
  if (!found.found) return `${found.explanation} Nothing changed.`;
  if (asker.speakerId !== undefined && !(await services.catalog.isAbout(asker.scope.id, found.memoryId, asker.speakerId))) return notYoursToChangeText(n);
  return { memoryId: found.memoryId };
}

/** `/fix <argument>`: corrects item N with the new text, or says why nothing changed. */
export async function answerFix(services: FixServices, asker: FixAsker, argument: string): Promise<string> {
  const request = parseFixArgument(argument);
  if (request.kind === 'usage') return FIX_USAGE;
  if (request.kind === 'no_text')
    return `What should item ${request.n} say instead? Write it after the number: /fix ${request.n} Jordi is my husband. Nothing changed.`;
  if (!services.corrections) return CORRECTIONS_UNAVAILABLE_TEXT;
  const target = await memoryOf(services, asker, request.n);
  if (typeof target === 'string') return target;
  const old = await services.catalog.explain(asker.scope.id, target.memoryId, 0);
  if (!old) return `Item ${request.n} has been forgotten since. Nothing changed.`;
  const origin: CorrectionOrigin = { by: 'person', door: `/fix in ${asker.where}` };
  try {
    const corrected = await services.corrections.correct(asker.scope.id, target.memoryId, request.text, origin);
    return `Corrected: ${excerpt(corrected.content, MAX_EXCERPT)} (was: ${excerpt(old.content, MAX_EXCERPT)})`;
  } catch (error) {
    return refusal(error);
  }
}

/** `/pin <argument>` (`pinned`) or `/unpin <argument>`: pins or unpins item N. */
export async function answerPin(services: FixServices, asker: FixAsker, argument: string, pinned: boolean): Promise<string> {
  const number = argument.trim().replace(/^#/, '');
  if (!/^\d{1,6}$/.test(number)) return pinUsage(pinned);
  if (!services.corrections) return CORRECTIONS_UNAVAILABLE_TEXT;
  const n = Number(number);
  const target = await memoryOf(services, asker, n);
  if (typeof target === 'string') return target;
  const origin: CorrectionOrigin = { by: 'person', door: `/${pinned ? 'pin' : 'unpin'} in ${asker.where}` };
  try {
    const memory = await services.corrections.pin(asker.scope.id, target.memoryId, pinned, origin);
    const text = excerpt(memory.content, MAX_EXCERPT);
    return pinned ? `Pinned: ${text}. It will not fade; /unpin ${n} lets it.` : `Unpinned: ${text}. It fades like any other memory when nothing confirms it.`;
  } catch (error) {
    return refusal(error);
  }
}
