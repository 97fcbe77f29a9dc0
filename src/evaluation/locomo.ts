/**
 * LoCoMo evidence-recall evaluation (Maharana et al., ACL 2024): each conversation goes into
 * its own scope, one episode per dialog turn (speaker as author, the session's date as time, the
 * turn's `dia_id` as external id, the session as conversation); every question that has evidence
 * is asked, and recall@k is the share of its evidence turns found in the top k. The generated
 * observation / summary / event fields are never read: they are derived from the answers.
 */
import fs from 'node:fs';
import { ValidationError } from '../shared/errors';
import type { EpisodeService } from '../memory/episodes/episode-service';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import type { NewEpisode } from '../storage/episode-repository';

interface LocomoTurn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}

interface LocomoQuestion {
  question: string;
  answer?: unknown;
  adversarial_answer?: unknown;
  evidence?: string[];
  category: number;
}

interface LocomoSample {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: LocomoQuestion[];
}

export interface LocomoEpisode {
  readonly externalId: string;
  readonly author: string;
  readonly content: string;
  readonly timestamp: Date;
  readonly conversationId: string;
}

/** A question with its gold answer (category 5, adversarial, has none: the conversation does not say). */
export interface LocomoQa {
  readonly question: string;
  readonly answer: string;
  readonly evidence: readonly string[];
  readonly category: number;
}

/** What category 5 (adversarial) questions are answered with: the conversation does not say. */
export const ADVERSARIAL_GOLD = 'Not mentioned in the conversation';

export interface LocomoConversation {
  readonly id: string;
  readonly speakers: readonly string[];
  readonly episodes: LocomoEpisode[];
  /** The questions that have evidence (what the recall evaluation asks). */
  readonly questions: ReadonlyArray<{ question: string; evidence: string[]; category: number }>;
  /** Every question, with its gold answer (what the QA evaluation asks). */
  readonly qa: readonly LocomoQa[];
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** "1:56 pm on 8 May, 2023" -> Date (UTC). */
export function parseLocomoDate(text: string): Date {
  const match = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(text);
  if (!match) throw new ValidationError(`unrecognized LoCoMo session date "${text}"`, { code: 'eval.bad_data' });
  const [, h, m, ampm, day, monthName, year] = match;
  const month = MONTHS.indexOf(monthName!.toLowerCase());
  if (month < 0) throw new ValidationError(`unrecognized month in "${text}"`, { code: 'eval.bad_data' });
  const hour = (Number(h) % 12) + (ampm!.toLowerCase() === 'pm' ? 12 : 0);
  return new Date(Date.UTC(Number(year), month, Number(day), hour, Number(m)));
}

/** Evidence ids as written in the data, split where several share one string ("D8:6; D9:17"). */
function evidenceIds(raw: readonly string[] | undefined): string[] {
  return (raw ?? [])
    .flatMap((e) => e.split(/[;,\s]+/))
    .map((e) => e.replace(/^D:/, 'D'))
    .filter((e) => /^D\d+:\d+$/.test(e));
}

/** Reads a LoCoMo-format file into conversations, turns and the questions that have evidence. */
export function loadLocomo(file: string): LocomoConversation[] {
  const samples = JSON.parse(fs.readFileSync(file, 'utf8')) as LocomoSample[];
  if (!Array.isArray(samples)) throw new ValidationError(`${file} is not a LoCoMo file (expected a JSON array of samples)`, { code: 'eval.bad_data' });
  return samples.map((sample) => {
    const conversation = sample.conversation;
    const episodes: LocomoEpisode[] = [];
    const sessions = Object.keys(conversation)
      .map((key) => /^session_(\d+)$/.exec(key)?.[1])
      .filter((n): n is string => n !== undefined)
      .sort((a, b) => Number(a) - Number(b));
    for (const n of sessions) {
      const turns = conversation[`session_${n}`] as LocomoTurn[];
      const date = conversation[`session_${n}_date_time`];
      if (!Array.isArray(turns) || typeof date !== 'string') continue;
      const timestamp = parseLocomoDate(date);
      for (const turn of turns) {
        const caption = turn.blip_caption ? ` [shares a photo: ${turn.blip_caption}]` : '';
        episodes.push({ externalId: turn.dia_id, author: turn.speaker, content: `${turn.text}${caption}`, timestamp, conversationId: `session_${n}` });
      }
    }
    const questions = sample.qa
      .map((q) => ({ question: String(q.question), evidence: evidenceIds(q.evidence), category: q.category }))
      .filter((q) => q.evidence.length > 0);
    const qa = sample.qa.map((q) => ({
      question: String(q.question),
      answer: q.answer === undefined || q.answer === null || q.category === 5 ? ADVERSARIAL_GOLD : String(q.answer),
      evidence: evidenceIds(q.evidence),
      category: q.category,
    }));
    const speakers = [conversation.speaker_a, conversation.speaker_b].filter((s): s is string => typeof s === 'string');
    return { id: sample.sample_id, speakers, episodes, questions, qa };
  });
}

export interface RecallReport {
  readonly conversations: number;
  readonly turns: number;
  readonly questions: number;
  readonly k: readonly number[];
  /** recall@k in percent, over all questions. */
  readonly recall: Record<string, number>;
  readonly byCategory: Record<string, { questions: number; recall: Record<string, number> }>;
  readonly ingestSeconds: number;
  readonly embedSeconds: number;
  readonly queryMs: { p50: number; p95: number };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** What asking every question gives: recall@k, per category, and the query times. */
export type QuestionReport = Pick<RecallReport, 'questions' | 'recall' | 'byCategory' | 'queryMs'> & {
  /**
   * Results that are not turns of the asked conversation (0 when search keeps to the asked scope;
   * a crowded store must not change that).
   */
  readonly foreignResults: number;
};

/** Asks every question of every conversation (already ingested and embedded) and scores recall@k. */
export async function askLocomo(params: {
  conversations: readonly LocomoConversation[];
  k: readonly number[];
  search: HybridSearch;
  scopeIdOf: (key: string) => Promise<string>;
  onProgress?: (stage: string, done: number, total: number) => void;
}): Promise<QuestionReport> {
  const { conversations, k } = params;
  const maxK = Math.max(...k);
  const sums = new Map<number, number>(k.map((x) => [x, 0]));
  const byCategory = new Map<number, { n: number; sums: Map<number, number> }>();
  const latencies: number[] = [];
  const total = conversations.reduce((n, c) => n + c.questions.length, 0);
  let asked = 0;
  let foreignResults = 0;
  for (const conversation of conversations) {
    const scopeId = await params.scopeIdOf(`locomo:${conversation.id}`);
    const own = new Set(conversation.episodes.map((e) => e.externalId));
    for (const q of conversation.questions) {
      const started = performance.now();
      const { results } = await params.search.search({ scopeId, semanticQuery: q.question, limit: maxK, kinds: ['episode'] });
      latencies.push(performance.now() - started);
      const ranked = results.map((r) => r.externalId);
      foreignResults += ranked.filter((id) => id === null || !own.has(id)).length;
      const category = byCategory.get(q.category) ?? { n: 0, sums: new Map(k.map((x) => [x, 0])) };
      category.n += 1;
      for (const x of k) {
        const top = new Set(ranked.slice(0, x));
        const found = q.evidence.filter((e) => top.has(e)).length / q.evidence.length;
        sums.set(x, sums.get(x)! + found);
        category.sums.set(x, category.sums.get(x)! + found);
      }
      byCategory.set(q.category, category);
      asked += 1;
      if (asked % 50 === 0) params.onProgress?.('questions', asked, total);
    }
  }
  const pct = (value: number, n: number) => Math.round((1000 * value) / Math.max(1, n)) / 10;
  latencies.sort((a, b) => a - b);
  return {
    questions: asked,
    recall: Object.fromEntries(k.map((x) => [`@${x}`, pct(sums.get(x)!, asked)])),
    byCategory: Object.fromEntries(
      [...byCategory.entries()]
        .sort(([a], [b]) => a - b)
        .map(([cat, v]) => [String(cat), { questions: v.n, recall: Object.fromEntries(k.map((x) => [`@${x}`, pct(v.sums.get(x)!, v.n)])) }]),
    ),
    queryMs: { p50: Math.round(percentile(latencies, 50) * 10) / 10, p95: Math.round(percentile(latencies, 95) * 10) / 10 },
    foreignResults,
  };
}

/**
 * Ingests every conversation, waits for the vectors (`embedAll`), runs `beforeQuestions` (e.g.
 * fills the store around the conversations), then asks every question and computes recall@k.
 * `search` must be wired to the same store as `episodes`.
 */
export async function evaluateLocomo(params: {
  conversations: readonly LocomoConversation[];
  k: readonly number[];
  episodes: EpisodeService;
  search: HybridSearch;
  scopeIdOf: (key: string) => Promise<string>;
  embedAll: () => Promise<void>;
  beforeQuestions?: () => Promise<void>;
  onProgress?: (stage: string, done: number, total: number) => void;
}): Promise<RecallReport & Pick<QuestionReport, 'foreignResults'>> {
  const { conversations, k } = params;
  const ingestStarted = Date.now();
  for (const [i, conversation] of conversations.entries()) {
    const episodes: NewEpisode[] = conversation.episodes.map((turn) =>
      params.episodes.normalize(
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
    await params.episodes.ingestMany({ key: `locomo:${conversation.id}`, channel: 'locomo' }, episodes);
    params.onProgress?.('ingest', i + 1, conversations.length);
  }
  const ingestSeconds = (Date.now() - ingestStarted) / 1000;
  const embedStarted = Date.now();
  await params.embedAll();
  const embedSeconds = (Date.now() - embedStarted) / 1000;
  await params.beforeQuestions?.();
  const asked = await askLocomo(params);
  return {
    conversations: conversations.length,
    turns: conversations.reduce((n, c) => n + c.episodes.length, 0),
    questions: asked.questions,
    k,
    recall: asked.recall,
    byCategory: asked.byCategory,
    ingestSeconds,
    embedSeconds,
    queryMs: asked.queryMs,
    foreignResults: asked.foreignResults,
  };
}
