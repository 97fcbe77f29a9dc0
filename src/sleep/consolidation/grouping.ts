/**
 * Groups a batch of episodes so each prompt is coherent (seed 000 step 2): turns of one
 * conversation stay together; episodes without a conversation are split where the channel
 * changes or the talk pauses for more than two hours. Groups are then packed, in time order,
 * into as few prompts as the size limits allow (a group too big for one prompt is split).
 */
import type { Episode } from '../../storage/prisma';
import type { PromptEpisodeGroup } from './prompt';
import { CONSOLIDATION_SYSTEM_PROMPT, GROUP_SPEAKERS_NOTE, INSIGHTS_REQUEST, PROMPT_EPISODE_CHARS } from './prompt';
import { CHARS_PER_TOKEN } from '../../llm/prompt-budget';
import { answerSchemaOf } from '../../llm/answer-schema';
import { consolidationAnswerSchema } from './operations';

/**
 * The answer's JSON Schema as structured outputs send it beside the prompt (it spends the window
 * too). Made on first use (then cached by answerSchemaOf), not when the module loads: every
 * process that builds the core loads this module, few consolidate, and making it costs ~0.05 s.
 */
const answerSchemaChars = (): number => JSON.stringify(answerSchemaOf(consolidationAnswerSchema) ?? {}).length;

export interface PackingLimits {
  /** Most episodes in one prompt. */
  readonly maxEpisodes: number;
  /** Most characters of episode text in one prompt (about 4 characters a token). */
  readonly maxChars: number;
}

/** A whole batch (100 episodes) in one prompt when the model's window allows it. */
export const DEFAULT_PACKING: PackingLimits = { maxEpisodes: 100, maxChars: 40_000 };

/**
 * Limits that fit a model's context window: what is left after the answer, the instructions (the
 * whole system prompt, its worked example included, counted at the same 3 characters a token,
 * plus the reflection request a due prompt carries, a group's note on speakers, and the answer's
 * JSON Schema sent with it) and the memories shown, at about 3 characters a token (on the safe side of 4), never above the
 * defaults. An 8k-token Ollama model gets prompts of ~3,000 characters; Claude gets the defaults.
 */
export function packingFor(contextWindow: number, maxAnswerTokens: number): PackingLimits {
  const instructions = Math.ceil(
    (CONSOLIDATION_SYSTEM_PROMPT.length + INSIGHTS_REQUEST.length + GROUP_SPEAKERS_NOTE.length + answerSchemaChars()) / CHARS_PER_TOKEN,
  );
  const reserved = maxAnswerTokens + instructions + 1_500; /* memories */
  const maxChars = Math.max(2_000, Math.min(DEFAULT_PACKING.maxChars, (contextWindow - reserved) * 3));
  return { maxEpisodes: DEFAULT_PACKING.maxEpisodes, maxChars };
}

const PAUSE_MS = 2 * 60 * 60 * 1000;

export function groupEpisodes(episodes: readonly Episode[]): PromptEpisodeGroup[] {
  const sorted = [...episodes].sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime() || a.id.localeCompare(b.id));
  const byConversation = new Map<string, Episode[]>();
  const loose: Episode[][] = [];
  for (const e of sorted) {
    if (e.conversationId) {
      const list = byConversation.get(e.conversationId) ?? [];
      list.push(e);
      byConversation.set(e.conversationId, list);
      continue;
    }
    const current = loose.at(-1);
    const last = current?.at(-1);
    if (current && last && last.channel === e.channel && e.timestamp.getTime() - last.timestamp.getTime() <= PAUSE_MS) current.push(e);
    else loose.push([e]);
  }
  const groups = [...byConversation.values(), ...loose].map((list) => ({ list, start: list[0]!.timestamp }));
  groups.sort((a, b) => a.start.getTime() - b.start.getTime());
  return groups.map(({ list, start }) => ({
    label: `Conversation on ${start.toISOString().slice(0, 10)} (${list[0]!.channel}${list[0]!.conversationId ? '' : ', no thread'})`,
    episodes: list.sort((a, b) => (a.turn ?? 0) - (b.turn ?? 0) || a.timestamp.getTime() - b.timestamp.getTime()),
  }));
}

function charsOf(e: Episode): number {
  return Math.min(e.content.length, PROMPT_EPISODE_CHARS) + 40;
}

/** Packs groups into prompts; returns one list of groups per prompt. */
export function packGroups(groups: readonly PromptEpisodeGroup[], limits: PackingLimits = DEFAULT_PACKING): PromptEpisodeGroup[][] {
  const prompts: PromptEpisodeGroup[][] = [];
  let current: PromptEpisodeGroup[] = [];
  let count = 0;
  let chars = 0;
  const flush = () => {
    if (current.length > 0) prompts.push(current);
    current = [];
    count = 0;
    chars = 0;
  };
  for (const group of groups) {
    let part: Episode[] = [];
    let partNo = 0;
    const emit = () => {
      if (part.length === 0) return;
      current.push({ label: partNo === 0 ? group.label : `${group.label}, continued`, episodes: part });
      partNo++;
      part = [];
    };
    for (const e of group.episodes) {
      const size = charsOf(e);
      if (count + 1 > limits.maxEpisodes || (chars + size > limits.maxChars && count > 0)) {
        emit();
        flush();
      }
      part.push(e);
      count++;
      chars += size;
    }
    emit();
  }
  flush();
  return prompts;
}

/**
 * A prompt's groups in two halves of about equal episode counts, for asking again about less at
 * once (after a cut-off answer, or an answer that could not be used). Whole groups go to one side
 * when there are several; a single group is split between its turns. Undefined at the floor:
 * one episode cannot be halved.
 */
export function halveGroups(groups: readonly PromptEpisodeGroup[]): [PromptEpisodeGroup[], PromptEpisodeGroup[]] | undefined {
  const total = groups.reduce((n, g) => n + g.episodes.length, 0);
  if (total <= 1) return undefined;
  if (groups.length === 1) {
    const only = groups[0]!;
    const middle = Math.ceil(only.episodes.length / 2);
    return [[{ label: only.label, episodes: only.episodes.slice(0, middle) }], [{ label: `${only.label}, continued`, episodes: only.episodes.slice(middle) }]];
  }
  let seen = 0;
  let cut = 1;
  for (; cut < groups.length - 1; cut++) {
    seen += groups[cut - 1]!.episodes.length;
    if (seen >= total / 2) break;
  }
  return [groups.slice(0, cut), groups.slice(cut)];
}

/**
 * A packed prompt cut into smaller ones for episodes that failed before: halved once per
 * attempt already counted, so a batch a model could not handle is asked about in ever smaller
 * parts (down to one episode a prompt) before it is given up on.
 */
export function splitForAttempts(groups: readonly PromptEpisodeGroup[], attempts: number): PromptEpisodeGroup[][] {
  let parts: PromptEpisodeGroup[][] = [[...groups]];
  for (let i = 0; i < attempts; i++) parts = parts.flatMap((p) => halveGroups(p) ?? [p]);
  return parts;
}
