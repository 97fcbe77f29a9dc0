/**
 * End-to-end LoCoMo question answering, scored as the Mem0 paper's J (share of answers an LLM
 * judge labels CORRECT): the whole product on a fresh store, driven on a simulated clock.
 *
 * For each conversation, one group scope (`locomo:group:<sample id>`):
 * 1. ingest: each session's turns are stored as that session's episodes, both speakers as
 *    authors (role user), with the session's real date as their time, the way `import` stores
 *    history (no reply is generated to stored history);
 * 2. sleep: with `nights`, the night (03:00 UTC) after each session runs the scheduler's
 *    consolidation and decay ticks, as `npm start` would at night between sessions (a session
 *    followed by another before that night shares the next one); with `end`, nights run only
 *    after the last session, until consolidation has nothing left; `none` skips sleep;
 * 3. questions: the day after the last session, each question is a message to the agent in that
 *    scope (`agent.handle`, the path every channel's message takes: retrieval, soul, prompt,
 *    memory tools), one minute apart. Questions are independent, as in the Mem0 evaluation:
 *    after each reply the open conversation is closed without its end memory, and the question,
 *    the reply and any note the reply saved are withdrawn from the store (rows, search index,
 *    vectors), so no later prompt shows an earlier question or answer;
 * 4. judging: {@link judgeAnswer} against the gold answer.
 *
 * What the reply prompt shows by itself is the soul, memories found for the message, and episodes
 * of the last 24 hours; older turns reach the model when it calls memory_search. So J measures
 * what sleep learned plus what the model looks up, as a person's question would get.
 */
import type { Agent } from '../agent/agent';
import type { LanguageModel } from '../llm/language-model';
import type { SleepScheduler } from '../sleep/scheduler';
import type { ConversationStore } from '../memory/conversations/conversation-store';
import type { EpisodeService } from '../memory/episodes/episode-service';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import { percentile, type LocomoConversation, type LocomoEpisode } from './locomo';
import { judgeAnswer } from './locomo-judge';
import { plural } from '../shared/plural';

export type SleepMode = 'nights' | 'end' | 'none';

/** What the evaluation drives: the running service's parts and its clock. */
export interface QaHarness {
  readonly agent: Pick<Agent, 'handle'>;
  readonly episodes: EpisodeService;
  readonly embeddingWorker: { drain(): Promise<unknown> };
  readonly scheduler: Pick<SleepScheduler, 'runConsolidation' | 'runDecay'>;
  readonly conversations: Pick<ConversationStore, 'find' | 'end'>;
  readonly directory: Pick<ScopeDirectory, 'findByKey'>;
  /** The model that judges (the configured one). */
  readonly judge: LanguageModel;
  /** Moves the service's clock. */
  setNow(now: Date): void;
  /** Removes these episodes of the scope from the store (rows, search index, vectors). */
  withdraw(scopeKey: string, episodeIds: readonly string[]): Promise<void>;
}

export interface QaOptions {
  readonly sleep: SleepMode;
  readonly onProgress?: (line: string) => void;
}

export interface QaItem {
  readonly conversation: string;
  readonly category: number;
  readonly question: string;
  readonly gold: string;
  readonly generated: string;
  readonly correct: boolean;
  /** Input + output tokens of the answering call(s), as the model reported them. */
  readonly tokens: number;
  readonly latencyMs: number;
  /** Set when the agent's reply was not a normal one (model unavailable, error) or the judge failed. */
  readonly problem?: string;
}

interface Stat {
  readonly mean: number;
  readonly p95: number;
}

export interface QaReport {
  readonly conversations: number;
  readonly turns: number;
  readonly questions: number;
  readonly correct: number;
  /** J in percent: share of questions judged CORRECT. */
  readonly j: number;
  readonly byCategory: Record<string, { questions: number; correct: number; j: number }>;
  readonly tokensPerQuestion: Stat;
  readonly latencyMsPerQuestion: Stat;
  readonly judgeTokens: number;
  readonly problems: number;
  readonly sleep: { readonly mode: SleepMode; readonly nights: number; readonly consolidations: number };
  readonly seconds: { readonly ingest: number; readonly sleep: number; readonly questions: number };
  readonly items: readonly QaItem[];
}

const NIGHT_HOUR_UTC = 3;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The most nights `end` runs (consolidation stops for the night at the daily token budget). */
const MAX_END_NIGHTS = 30;

/** The first 03:00 UTC at least an hour after `t` (the scope is idle by then). */
export function nightAfter(t: Date): Date {
  const night = new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), NIGHT_HOUR_UTC));
  while (night.getTime() < t.getTime() + HOUR_MS) night.setTime(night.getTime() + DAY_MS);
  return night;
}

/** The turns of each session, in order. */
function sessionsOf(conversation: LocomoConversation): LocomoEpisode[][] {
  const sessions = new Map<string, LocomoEpisode[]>();
  for (const episode of conversation.episodes) {
    const list = sessions.get(episode.conversationId) ?? [];
    list.push(episode);
    sessions.set(episode.conversationId, list);
  }
  return [...sessions.values()];
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const pct = (n: number, of: number) => round1((100 * n) / Math.max(1, of));

function stat(values: readonly number[]): Stat {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = values.reduce((s, x) => s + x, 0) / Math.max(1, values.length);
  return { mean: round1(mean), p95: round1(percentile(sorted, 95)) };
}

export function scopeKeyOf(conversation: LocomoConversation): string {
  return `locomo:group:${conversation.id}`;
}

/**
 * Runs the evaluation for `conversations` (each with the questions to ask in `qa`). The harness
 * must be a fresh store: scopes are keyed by sample id.
 */
export async function runLocomoQa(conversations: readonly LocomoConversation[], harness: QaHarness, options: QaOptions): Promise<QaReport> {
  const say = options.onProgress ?? (() => undefined);
  const items: QaItem[] = [];
  const seconds = { ingest: 0, sleep: 0, questions: 0 };
  let nights = 0;
  let consolidations = 0;
  let judgeTokens = 0;

  async function night(at: Date, scopeKey: string): Promise<boolean> {
    const started = performance.now();
    harness.setNow(at);
    await harness.embeddingWorker.drain();
    const report = await harness.scheduler.runConsolidation(at);
    await harness.scheduler.runDecay(at);
    nights++;
    const ran = report.scopes.some((s) => s.scopeKey === scopeKey && s.status !== 'not-due' && s.status !== 'busy');
    if (ran) consolidations++;
    seconds.sleep += (performance.now() - started) / 1000;
    return ran;
  }

  for (const conversation of conversations) {
    const scope = {
      key: scopeKeyOf(conversation),
      channel: 'locomo',
      kind: 'group',
      title: `LoCoMo ${conversation.id}: ${conversation.speakers.join(' and ')}`,
    };
    const sessions = sessionsOf(conversation);
    for (const [i, session] of sessions.entries()) {
      const started = performance.now();
      const at = session[0]!.timestamp;
      harness.setNow(at);
      const episodes = session.map((turn) =>
        harness.episodes.normalize(
          {
            content: turn.content,
            author: turn.author,
            timestamp: turn.timestamp.toISOString(),
            externalId: turn.externalId,
            conversationId: turn.conversationId,
          },
          'locomo',
        ),
      );
      await harness.episodes.ingestMany(scope, episodes);
      seconds.ingest += (performance.now() - started) / 1000;
      say(`${conversation.id}: session ${i + 1}/${sessions.length} stored (${plural(session.length, 'turn')})`);
      const next = sessions[i + 1]?.[0]?.timestamp;
      const tonight = nightAfter(at);
      if (options.sleep === 'nights' && (!next || tonight.getTime() < next.getTime())) await night(tonight, scope.key);
    }
    const last = sessions.at(-1)?.[0]?.timestamp ?? new Date(0);
    let asleep = nightAfter(last);
    if (options.sleep === 'end') {
      for (let n = 0; n < MAX_END_NIGHTS && (await night(asleep, scope.key)); n++) asleep = new Date(asleep.getTime() + DAY_MS);
    }
    await harness.embeddingWorker.drain();
    say(`${conversation.id}: ${plural(nights, 'night')} so far, ${consolidations} with consolidation`);

    // The questions: the day after the last session (after its night), one minute apart.
    const askStarted = performance.now();
    let now = new Date(asleep.getTime() + 9 * HOUR_MS);
    for (const [i, q] of conversation.qa.entries()) {
      now = new Date(now.getTime() + 60_000);
      harness.setNow(now);
      const started = performance.now();
      const reply = await harness.agent.handle({
        channel: 'locomo',
        scopeKey: scope.key,
        scopeKind: 'group',
        authorId: 'questioner',
        authorName: 'Questioner',
        text: q.question,
        timestamp: now,
        externalId: `question-${i + 1}`,
      });
      const latencyMs = performance.now() - started;
      const tokens = reply.reported.inputTokens + reply.reported.outputTokens;
      const scopeRow = await harness.directory.findByKey(scope.key);
      const open = scopeRow ? await harness.conversations.find(scopeRow.id) : null;
      if (open) await harness.conversations.end(open, 'evaluation: next question', now);
      const asked = [reply.episodeIds.user, reply.episodeIds.reply, ...reply.episodeIds.notes].filter((id): id is string => id !== null);
      await harness.withdraw(scope.key, asked);
      let correct = false;
      let problem: string | undefined = reply.degraded ? `reply ${reply.degraded}` : undefined;
      try {
        const verdict = await judgeAnswer(harness.judge, { question: q.question, gold: q.answer, generated: reply.text });
        correct = verdict.correct;
        judgeTokens += verdict.tokens;
      } catch (error) {
        problem = `judge failed: ${(error as Error).message}`;
      }
      items.push({
        conversation: conversation.id,
        category: q.category,
        question: q.question,
        gold: q.answer,
        generated: reply.text,
        correct,
        tokens,
        latencyMs,
        ...(problem && { problem }),
      });
      if ((i + 1) % 10 === 0 || i + 1 === conversation.qa.length) say(`${conversation.id}: ${i + 1}/${conversation.qa.length} questions answered and judged`);
    }
    seconds.questions += (performance.now() - askStarted) / 1000;
  }

  const correct = items.filter((x) => x.correct).length;
  const categories = [...new Set(items.map((x) => x.category))].sort((a, b) => a - b);
  return {
    conversations: conversations.length,
    turns: conversations.reduce((n, c) => n + c.episodes.length, 0),
    questions: items.length,
    correct,
    j: pct(correct, items.length),
    byCategory: Object.fromEntries(
      categories.map((cat) => {
        const of = items.filter((x) => x.category === cat);
        const right = of.filter((x) => x.correct).length;
        return [String(cat), { questions: of.length, correct: right, j: pct(right, of.length) }];
      }),
    ),
    tokensPerQuestion: stat(items.map((x) => x.tokens)),
    latencyMsPerQuestion: stat(items.map((x) => x.latencyMs)),
    judgeTokens,
    problems: items.filter((x) => x.problem).length,
    sleep: { mode: options.sleep, nights, consolidations },
    seconds: { ingest: round1(seconds.ingest), sleep: round1(seconds.sleep), questions: round1(seconds.questions) },
    items,
  };
}
