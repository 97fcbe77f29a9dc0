/**
 * `/forget`: the owner removes something the agent learned, everywhere it is kept (rows, the
 * full-text index, vectors, the soul and digests; src/memory/forget/forget-service.ts does the
 * removing). The matches it lists pass the output filter, like every stored text shown.
 *
 * Nothing goes before the person has seen exactly what will go and confirmed it (how they
 * confirm — a button, a `y` line — is the channel's):
 * - `/forget 3`: item 3 of the list seen last (a /memories page as it was shown, filter included;
 *   a /sleep summary; or the latest digest), with its earlier versions, which go with it.
 * - `/forget my ex`: every memory containing those words.
 */
import { AppError, NotFoundError } from '../../shared/errors';
import { changesAnything, describeOtherChanges, type ForgetCounts } from '../../memory/forget/forget-effects';
import type { ForgetPreview, ForgetResult, ForgetService } from '../../memory/forget/forget-service';
import { showStored } from '../../memory/output-filter';
import { plural, pluralWord } from '../../shared/plural';
import { excerpt, type CommandScope } from './command-scope';
import { listName, lookupNumber, type NumberSources } from './numbered-lists';
import { asSentence } from '../../shared/sentence';

const MAX_LISTED = 20;
const MAX_EXCERPT = 160;

/** The answer to a bare `/forget`. */
export const FORGET_USAGE =
  'Tell me what to forget (I show you what would go and ask first):\n/forget 3 — item 3 of the last /memories list, /sleep summary or digest you saw\n/forget my ex — everything I remember that mentions those words';

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

/** `/forget N`: shows item N of the last list the person saw (with the versions that go with it) and asks; removes nothing yet. */
export async function previewForgetNumber(
  params: NumberSources & { forget: Pick<ForgetService, 'prepareForget'>; scope: CommandScope; n: number },
): Promise<ForgetAnswer> {
  const { n } = params;
  const found = await lookupNumber(params, params.scope.id, n);
  if (!found.found) return { kind: 'answer', text: found.explanation };
  let preview: ForgetPreview;
  try {
    preview = await params.forget.prepareForget(params.scope.id, found.memoryId);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    return { kind: 'answer', text: `Item ${n} is already forgotten.` };
  }
  const earlier = preview.matches.length - 1;
  const versions = earlier > 0 ? `, with ${plural(earlier, 'earlier version')} that ${pluralWord(earlier, 'goes', 'go')} with it` : '';
  const listed = preview.matches.map((m) => `• ${excerpt(showStored(m.content), MAX_EXCERPT)}${describeState(m.state)}`);
  const also = alsoChanged(preview.counts);
  const text = [
    `Item ${n} of ${listName(found.from)}${versions}:`,
    '',
    ...listed,
    '',
    ...also,
    ...(also.length > 0 ? [''] : []),
    pluralWord(preview.matches.length, 'Forget it?', 'Forget them?'),
  ].join('\n');
  return { kind: 'confirm', text, preview };
}

/**
 * What else confirming changes, counted by the preview (which did the forget and rolled it back):
 * the messages replaced by a placeholder, then the summaries, people and things, export files.
 */
function alsoChanged(counts: ForgetCounts): string[] {
  const n = counts.messages;
  const messages =
    n > 0
      ? [
          `${plural(n, 'message')} of our conversations ${pluralWord(n, 'goes', 'go')} with it; ${pluralWord(n, 'its', 'their')} text will be replaced by a placeholder.`,
        ]
      : [];
  const rest = describeOtherChanges({ ...counts, messages: 0 });
  return [...messages, ...(rest.length > 0 ? [`It is also taken out of ${rest.join(', ')}.`] : [])];
}

function describeState(state: ForgetPreview['matches'][number]['state']): string {
  return state === 'active' ? '' : ` (${state === 'superseded' ? 'earlier version' : state})`;
}

/** What `/forget N` and `/forget words` answer: a final answer, or the memories to confirm. */
export type ForgetAnswer =
  | { readonly kind: 'answer'; readonly text: string }
  /** `text` lists the matches and ends with the question "Forget them?"; `confirm` with {@link confirmForget}. */
  | { readonly kind: 'confirm'; readonly text: string; readonly preview: ForgetPreview };

/**
 * `/forget words`: finds the memories containing every word, removing nothing yet. `speakerId`:
 * a group member's request, which reaches only the memories about them.
 */
export async function previewForgetWords(
  forget: Pick<ForgetService, 'forgetMatching'>,
  scopeId: string,
  words: string,
  speakerId?: string,
): Promise<ForgetAnswer> {
  let preview: ForgetPreview;
  try {
    preview = await forget.forgetMatching(scopeId, words, speakerId === undefined ? {} : { speakerId });
  } catch (error) {
    if (error instanceof AppError && error.category === 'user') return { kind: 'answer', text: `${asSentence(error.message)}\n\n${FORGET_USAGE}` };
    throw error;
  }
  const quoted = `“${preview.terms.join(' ')}”`;
  if (preview.matches.length === 0 && !changesAnything(preview.counts))
    return { kind: 'answer', text: `Nothing I remember${speakerId === undefined ? '' : ' about you'} mentions ${quoted}.` };
  // Every version of every matched memory is listed: confirming removes exactly these.
  const listed = preview.matches.slice(0, MAX_LISTED).map((m) => `• ${excerpt(showStored(m.content), MAX_EXCERPT)}${describeState(m.state)}`);
  const more = preview.matches.length > MAX_LISTED ? [`…and ${preview.matches.length - MAX_LISTED} more.`] : [];
  const messages = alsoChanged(preview.counts);
  const count = preview.matches.length;
  const head =
    count > 0
      ? [`${count === 1 ? 'This memory mentions' : `These ${count} memories mention`} ${quoted}:`, '', ...listed, ...more, '']
      : [`No memory mentions ${quoted}.`, ''];
  const text = [...head, ...messages, ...(messages.length > 0 ? [''] : []), pluralWord(count, 'Forget it?', 'Forget them?')].join('\n');
  return { kind: 'confirm', text, preview };
}

/** The person confirmed: forgets what the preview matched; returns the answer. */
export async function confirmForget(preview: ForgetPreview, reason: string): Promise<string> {
  let result: ForgetResult;
  try {
    result = await preview.confirm({ reason });
  } catch (error) {
    // A memory got a new version since the list was shown: nothing went; the person asks again.
    if (error instanceof AppError && error.category === 'user') return `${asSentence(error.message)}. I forgot nothing.`;
    throw error;
  }
  const removed = result.removedIds.length;
  const others = describeOtherChanges(result.counts);
  const also = others.length > 0 ? ` Also changed: ${others.join(', ')}.` : '';
  if (removed > 0)
    return `Done: I forgot ${plural(removed, 'memory', 'memories')}. ${pluralWord(removed, 'It is', 'They are')} gone from my memory, my search index and my notes about you.${also}`;
  if (changesAnything(result.counts)) return `Done: I took it out of ${others.join(', ')}. It is gone from my memory and my search index.`;
  return 'Those memories were already gone.';
}
