/**
 * `/forget`: the owner removes something the agent learned, everywhere it is kept (rows, the
 * full-text index, vectors, the soul and digests; src/memory/forget/forget-service.ts does the
 * removing). The matches it lists pass the output filter, like every stored text shown.
 *
 * - `/forget 3`: item 3 of the list seen last (a /memories page or the latest digest), with its
 *   earlier versions. Done at once: the number points at one thing the person just saw.
 * - `/forget my ex`: every memory containing those words. Nothing goes until the person confirms
 *   the list of what matches; how they confirm (a button, a `y` line) is the channel's.
 */
import { AppError, NotFoundError } from '../../shared/errors';
import type { ForgetPreview, ForgetResult, ForgetService } from '../../memory/forget/forget-service';
import { showStored } from '../../memory/output-filter';
import { excerpt, plural, type CommandScope } from './command-scope';
import { lookupNumber, type NumberSources } from './numbered-lists';

const MAX_LISTED = 20;
const MAX_EXCERPT = 160;

/** The answer to a bare `/forget`. */
export const FORGET_USAGE =
  'Tell me what to forget:\n/forget 3 — item 3 of the last /memories list or digest you saw\n/forget my ex — everything I remember that mentions those words (I show you what matches first)';

/** The answer when the person declines to forget what matched. */
export const FORGET_KEPT_TEXT = 'Kept: I forgot nothing.';

/** The audit reason of a forget asked for in `where` (`Telegram`, `the terminal`). */
export function forgetReason(where: string): string {
  return `the owner asked with /forget in ${where}`;
}

export type ForgetRequest = { readonly kind: 'usage' } | { readonly kind: 'number'; readonly n: number } | { readonly kind: 'words'; readonly words: string };

/** What `/forget <argument>` asks for: nothing (usage), a number (`3`, `#3`) or words. */
export function parseForgetArgument(argument: string): ForgetRequest {
  const trimmed = argument.trim();
  if (trimmed === '') return { kind: 'usage' };
  if (/^#?\d{1,6}$/.test(trimmed)) return { kind: 'number', n: Number(trimmed.replace('#', '')) };
  return { kind: 'words', words: trimmed };
}

/** `/forget N`: forgets item N of the last list the person saw, at once; returns the answer. */
export async function forgetByNumber(
  params: NumberSources & { forget: Pick<ForgetService, 'forgetMemory'>; scope: CommandScope; n: number; reason: string },
): Promise<string> {
  const { n } = params;
  const found = await lookupNumber(params, params.scope.id, n);
  if (!found.found) return found.explanation;
  let result: ForgetResult;
  try {
    result = await params.forget.forgetMemory(params.scope.id, found.memoryId, { reason: params.reason });
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    return `Item ${n} is already forgotten.`;
  }
  const versions = result.removedIds.length - 1;
  return (
    `Done: I forgot item ${n} of your ${found.from === 'digest' ? 'latest digest' : '/memories list'}` +
    (versions > 0 ? ` and ${plural(versions, 'earlier version', 'earlier versions')} of it` : '') +
    '. It is gone from my memory, my search index and my notes about you.'
  );
}

/** What `/forget words` answers: a final answer, or the matches to confirm. */
export type ForgetWordsAnswer =
  | { readonly kind: 'answer'; readonly text: string }
  /** `text` lists the matches and ends with the question "Forget them?"; `confirm` with {@link confirmForget}. */
  | { readonly kind: 'confirm'; readonly text: string; readonly preview: ForgetPreview };

/** `/forget words`: finds the memories containing every word, removing nothing yet. */
export async function previewForgetWords(
  forget: Pick<ForgetService, 'forgetMatching'>,
  scopeId: string,
  words: string,
): Promise<ForgetWordsAnswer> {
  let preview: ForgetPreview;
  try {
    preview = await forget.forgetMatching(scopeId, words);
  } catch (error) {
    if (error instanceof AppError && error.category === 'user') return { kind: 'answer', text: `${error.message}\n\n${FORGET_USAGE}` };
    throw error;
  }
  const quoted = `“${preview.terms.join(' ')}”`;
  if (preview.matches.length === 0 && preview.episodes === 0) return { kind: 'answer', text: `Nothing I remember mentions ${quoted}.` };
  // Every version of every matched memory is listed: confirming removes exactly these.
  const listed = preview.matches.slice(0, MAX_LISTED).map((m) => `• ${excerpt(showStored(m.content), MAX_EXCERPT)}${m.state === 'active' ? '' : ` (${m.state === 'superseded' ? 'earlier version' : m.state})`}`);
  const more = preview.matches.length > MAX_LISTED ? [`…and ${preview.matches.length - MAX_LISTED} more.`] : [];
  const messages = preview.episodes > 0 ? [`${plural(preview.episodes, 'message', 'messages')} of our conversations ${preview.episodes === 1 ? 'mentions' : 'mention'} it too; ${preview.episodes === 1 ? 'its' : 'their'} text will be replaced by a placeholder.`] : [];
  const head = preview.matches.length > 0 ? [`These ${plural(preview.matches.length, 'memory mentions', 'memories mention')} ${quoted}:`, '', ...listed, ...more, ''] : [`No memory mentions ${quoted}.`, ''];
  const text = [...head, ...messages, ...(messages.length > 0 ? [''] : []), 'Forget them?'].join('\n');
  return { kind: 'confirm', text, preview };
}

/** The person confirmed: forgets what the preview matched; returns the answer. */
export async function confirmForget(preview: ForgetPreview, reason: string): Promise<string> {
  let result: ForgetResult;
  try {
    result = await preview.confirm({ reason });
  } catch (error) {
    // A memory got a new version since the list was shown: nothing went; the person asks again.
    if (error instanceof AppError && error.category === 'user') return `${error.message}. I forgot nothing.`;
    throw error;
  }
  if (result.removedIds.length > 0) return `Done: I forgot ${plural(result.removedIds.length, 'memory', 'memories')}. They are gone from my memory, my search index and my notes about you.`;
  if (result.episodesRedacted > 0) return `Done: I replaced ${plural(result.episodesRedacted, 'message', 'messages')} mentioning it with a placeholder. It is gone from my memory and my search index.`;
  return 'Those memories were already gone.';
}
