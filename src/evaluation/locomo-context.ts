/**
 * Whether what a person said reaches the reply: LoCoMo's conversations delivered to the agent as
 * chat messages, then each question asked as the person's message, and scored by the prompt the
 * model was sent (no model judges anything, so the figure is deterministic and free).
 *
 * For each conversation, one group scope (`locomo:group:<sample id>`):
 * 1. delivery: every turn is a message of its speaker at its session's date (turns 30 s apart), through
 *    `agent.observe`, the path a group's talk takes when it is not addressed to the agent: the two
 *    people talk to each other, and an answer to every turn would put replies between their turns
 *    that they never saw. Between sessions the idle sweep ends the open conversation, as the
 *    running service's sweep does. Sleep is off: nothing is consolidated (the worst case for lag);
 * 2. questions: the day after the last session, each question is a message to the agent
 *    (`agent.handle`: retrieval, soul, prompt), one minute apart, independent of each other as in
 *    the QA evaluation (the conversation is closed and the question and reply withdrawn);
 * 3. scoring: `contextRecall` is the share of the question's evidence turns whose text appears in
 *    the request the model was sent (system text and messages), averaged over questions.
 *
 * Besides recall it reports the prompt's estimated tokens, the reply's overhead (the agent's wall
 * time less the model's), and what a prompt holding the whole conversation would cost.
 */
import type { Agent } from '../agent/agent';
import type { LanguageModel, LlmRequest } from '../llm/language-model';
import type { ConversationStore } from '../memory/conversations/conversation-store';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import { percentile, type LocomoConversation } from './locomo';
import { formatEpisode } from '../memory/retrieval/retrieve-context';
import { estimateTokens } from '../shared/tokens';
import { plural } from '../shared/plural';

/** What the evaluation drives: the running service's parts, its clock, and the model's last reply request. */
export interface ContextHarness {
  readonly agent: Pick<Agent, 'handle' | 'observe' | 'sweepIdle'>;
  readonly embeddingWorker: { drain(): Promise<unknown> };
  readonly conversations: Pick<ConversationStore, 'find' | 'end'>;
  readonly directory: Pick<ScopeDirectory, 'findByKey'>;
  readonly model: RecordingModel;
  setNow(now: Date): void;
  withdraw(scopeKey: string, episodeIds: readonly string[]): Promise<void>;
}

interface Stat {
  readonly p50: number;
  readonly p95: number;
}

export interface ContextItem {
  readonly conversation: string;
  readonly category: number;
  readonly question: string;
  /** Share of the evidence turns whose text reached the prompt (0-1). */
  readonly recall: number;
  readonly promptTokens: number;
  readonly overheadMs: number;
}

export interface ContextReport {
  readonly conversations: number;
  readonly turns: number;
  readonly questions: number;
  readonly contextRecall: number;
  readonly byCategory: Record<string, { questions: number; contextRecall: number }>;
  readonly promptTokens: Stat;
  readonly replyOverheadMs: Stat;
  /** The prompt with every turn of the conversation instead of the retrieved context. */
  readonly fullContextPromptTokens: Stat;
  readonly seconds: { readonly delivery: number; readonly questions: number };
  readonly items: readonly ContextItem[];
}

/**
 * A model that answers every call with "ok", remembers the last reply request and counts the time
 * spent in it: what the context evaluation needs, with no network and no variance.
 */
export interface RecordingModel extends LanguageModel {
  /** The last request made for a reply (purpose `reply`). */
  lastReply(): LlmRequest | undefined;
  /** Milliseconds spent inside `complete` so far. */
  elapsedMs(): number;
}

/** The deterministic model of the evaluation; its window is a large hosted model's. */
export function createOkModel(contextWindow = 200_000): RecordingModel {
  let last: LlmRequest | undefined;
  let elapsed = 0;
  return {
    provider: 'anthropic',
    model: 'in-process-ok',
    contextWindow,
    async complete(request) {
      const started = performance.now();
      if (request.purpose === 'reply') last = request;
      const input = estimateTokens(promptText(request));
      elapsed += performance.now() - started;
      return {
        text: 'ok',
        toolCalls: [],
        stopReason: 'end',
        usage: { inputTokens: input, outputTokens: 1 },
        model: 'in-process-ok',
        provider: 'anthropic',
        durationMs: 0,
      };
    },
    lastReply: () => last,
    elapsedMs: () => elapsed,
    close: async () => undefined,
  };
}

/** Everything a request shows the model, as one text. */
export function promptText(request: LlmRequest): string {
  return [request.system ?? '', ...request.messages.map((m) => m.content)].join('\n');
}

const squash = (text: string) => text.replace(/\s+/g, ' ').trim();
const round3 = (x: number) => Math.round(x * 1000) / 1000;
const TURN_GAP_MS = 30_000;
/** When the questions are asked: noon UTC of the day after the last session. */
const QUESTION_HOUR_UTC = 12;

function stat(values: readonly number[]): Stat {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: Math.round(percentile(sorted, 50) * 10) / 10, p95: Math.round(percentile(sorted, 95) * 10) / 10 };
}

export function contextScopeKey(conversation: LocomoConversation): string {
  return `locomo:group:${conversation.id}`;
}

/** Runs the evaluation on a fresh service (scopes are keyed by sample id). */
export async function runLocomoContext(
  conversations: readonly LocomoConversation[],
  harness: ContextHarness,
  onProgress: (line: string) => void = () => undefined,
): Promise<ContextReport> {
  const items: ContextItem[] = [];
  const fullContext: number[] = [];
  const seconds = { delivery: 0, questions: 0 };
  for (const conversation of conversations) {
    const scopeKey = contextScopeKey(conversation);
    const started = performance.now();
    let last = new Date(0);
    let session = '';
    let offset = 0;
    for (const turn of conversation.episodes) {
      if (turn.conversationId !== session) {
        session = turn.conversationId;
        offset = 0;
        harness.setNow(turn.timestamp);
        // The running service's idle sweep ends the earlier session's conversation before this one starts.
        await harness.agent.sweepIdle(turn.timestamp);
      }
      const at = new Date(turn.timestamp.getTime() + offset++ * TURN_GAP_MS);
      harness.setNow(at);
      last = at;
      await harness.agent.observe({
        channel: 'locomo',
        scopeKey,
        scopeKind: 'group',
        authorId: turn.author,
        authorName: turn.author,
        text: turn.content,
        timestamp: at,
        externalId: turn.externalId,
      });
    }
    await harness.embeddingWorker.drain();
    seconds.delivery += (performance.now() - started) / 1000;
    onProgress(`${conversation.id}: ${plural(conversation.episodes.length, 'turn')} delivered`);

    const text = new Map(conversation.episodes.map((e) => [e.externalId, squash(e.content)]));
    const everything = conversation.episodes.map((e) => formatEpisode('user', e.author, e.timestamp, e.content, 'UTC')).join('\n');
    const asked = performance.now();
    let now = new Date(Date.UTC(last.getUTCFullYear(), last.getUTCMonth(), last.getUTCDate() + 1, QUESTION_HOUR_UTC));
    harness.setNow(now);
    await harness.agent.sweepIdle(now);
    for (const [i, q] of conversation.questions.entries()) {
      now = new Date(now.getTime() + 60_000);
      harness.setNow(now);
      const modelBefore = harness.model.elapsedMs();
      const t0 = performance.now();
      const reply = await harness.agent.handle({
        channel: 'locomo',
        scopeKey,
        scopeKind: 'group',
        authorId: 'questioner',
        authorName: 'Questioner',
        text: q.question,
        timestamp: now,
        externalId: `question-${i + 1}`,
      });
      const overheadMs = performance.now() - t0 - (harness.model.elapsedMs() - modelBefore);
      const request = harness.model.lastReply();
      const prompt = request ? squash(promptText(request)) : '';
      const found = q.evidence.filter((id) => {
        const turn = text.get(id);
        return turn !== undefined && prompt.includes(turn);
      }).length;
      const promptTokens = reply.tokens?.prompt ?? 0;
      fullContext.push(promptTokens - (reply.tokens?.memories ?? 0) + estimateTokens(everything));
      items.push({ conversation: conversation.id, category: q.category, question: q.question, recall: found / q.evidence.length, promptTokens, overheadMs });
      const scope = await harness.directory.findByKey(scopeKey);
      const open = scope ? await harness.conversations.find(scope.id) : null;
      if (open) await harness.conversations.end(open, 'evaluation: next question', now);
      await harness.withdraw(
        scopeKey,
        [reply.episodeIds.user, reply.episodeIds.reply, ...reply.episodeIds.notes].filter((id): id is string => id !== null),
      );
      if ((i + 1) % 50 === 0 || i + 1 === conversation.questions.length)
        onProgress(`${conversation.id}: ${i + 1}/${conversation.questions.length} questions asked`);
    }
    seconds.questions += (performance.now() - asked) / 1000;
  }
  const mean = (xs: readonly ContextItem[]) => round3(xs.reduce((s, x) => s + x.recall, 0) / Math.max(1, xs.length));
  const categories = [...new Set(items.map((x) => x.category))].sort((a, b) => a - b);
  return {
    conversations: conversations.length,
    turns: conversations.reduce((n, c) => n + c.episodes.length, 0),
    questions: items.length,
    contextRecall: mean(items),
    byCategory: Object.fromEntries(
      categories.map((cat) => {
        const of = items.filter((x) => x.category === cat);
        return [String(cat), { questions: of.length, contextRecall: mean(of) }];
      }),
    ),
    promptTokens: stat(items.map((x) => x.promptTokens)),
    replyOverheadMs: stat(items.map((x) => x.overheadMs)),
    fullContextPromptTokens: stat(fullContext),
    seconds: { delivery: Math.round(seconds.delivery * 10) / 10, questions: Math.round(seconds.questions * 10) / 10 },
    items,
  };
}
