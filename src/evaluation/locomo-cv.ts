/**
 * `eval locomo --cv`: leave-one-conversation-out cross-validation of hybrid search's weights on
 * LoCoMo. For each conversation, the weights are chosen by a coordinate search over a small grid
 * on the other conversations' questions, and recall@k is measured on its own; together the
 * held-out figures are the cross-validated ones, beside the in-sample figures of the defaults.
 *
 * Affordable: every question's candidates are gathered once (`turnCandidates`: the full-text and
 * vector queries, the rows), and every turn of each scope is read once; a grid point is then
 * scored with the same `scoreTurns` a search runs, in memory. The evaluation reproduces the search's
 * ranking exactly, which `evaluateLocomoCv` checks on the defaults before tuning (`replica`).
 */
import type { EpisodeSearchRow } from '../storage/episode-repository';
import type { InspectableSearch, TurnCandidates } from '../memory/retrieval/hybrid-search';
import type { SearchWeights } from '../memory/retrieval/search-scoring';
import { scoreTurns } from '../memory/retrieval/turn-scoring';
import { crossValidate, type GridPoint, type ParamGrid } from './cross-validation';
import type { LocomoConversation } from './locomo';

/**
 * The weights tuned, and their values: the keyword weight (0.5) is the scale and stays; recency
 * and importance carry no signal on LoCoMo (every turn's importance is the same, the questions
 * come after the last session) and stay. Each list spans "off" (or half) to double the value in
 * its middle, which is where the search starts: a start that no conversation chose, so a fold's
 * choice depends on its tuning conversations only.
 */
export const CV_GRID: ParamGrid = {
  semantic: [0.1, 0.25, 0.4, 0.6],
  context: [0.3, 0.6, 0.9],
  session: [0, 0.4, 0.8],
  passage: [0, 0.2, 0.4],
  speaker: [0, 0.2, 0.4],
  substance: [0, 0.2, 0.4],
  time: [0.5, 1, 2],
};

/** The middle value of each parameter's list (the lower middle of an even list). */
export function gridMiddle(grid: ParamGrid): GridPoint {
  return Object.fromEntries(Object.entries(grid).map(([name, values]) => [name, values[Math.floor((values.length - 1) / 2)]!]));
}

/** One question with everything needed to rank its turns again under other weights. */
export interface CachedQuestion {
  readonly group: string;
  readonly question: string;
  readonly category: number;
  readonly evidence: readonly string[];
  readonly candidates: TurnCandidates;
}

/** Every turn of a scope, by position (what `atTurns` reads during scoring). */
export type TurnsByPosition = ReadonlyMap<string, EpisodeSearchRow>;

export interface CvFigures {
  readonly questions: number;
  readonly recall: Record<string, number>;
  readonly byCategory: Record<string, { questions: number; recall: Record<string, number> }>;
}

export interface CvReport extends CvFigures {
  /** In-sample recall of the defaults from the cached candidates (must equal the search's). */
  readonly replica: Record<string, number>;
  readonly folds: ReadonlyArray<{ heldOut: string; questions: number; weights: GridPoint; recall: Record<string, number> }>;
  /** The weights chosen on all conversations together, and their (in-sample) recall. */
  readonly tunedOnAll: { weights: GridPoint; recall: Record<string, number> };
  readonly grid: ParamGrid;
  readonly pointsMeasured: number;
  readonly seconds: number;
}

const positionKey = (conversationId: string, turn: number) => `${conversationId}#${turn}`;

/** Indexes a scope's rows by position. */
export function turnsByPosition(rows: readonly EpisodeSearchRow[]): TurnsByPosition {
  const map = new Map<string, EpisodeSearchRow>();
  for (const row of rows) if (row.conversationId && row.turn !== null) map.set(positionKey(row.conversationId, row.turn), row);
  return map;
}

/** The external ids of the best `limit` turns under `weights`, ranked as hybrid search ranks them. */
export async function rankCached(question: CachedQuestion, turns: TurnsByPosition, weights: SearchWeights, radius: number, limit: number): Promise<string[]> {
  const scored = await scoreTurns({
    evidence: question.candidates.evidence,
    rows: question.candidates.rows,
    weights,
    radius,
    atTurns: async (positions) => positions.map((p) => turns.get(positionKey(p.conversationId, p.turn))).filter((r): r is EpisodeSearchRow => r !== undefined),
  });
  return [...scored.values()]
    .sort((a, b) => b.base - a.base || a.id.localeCompare(b.id))
    .slice(0, limit)
    .map((s) => s.episode!.externalId ?? s.id);
}

/** Share of the evidence in the top k, for each k. */
export function recallAt(ranked: readonly string[], evidence: readonly string[], k: readonly number[]): number[] {
  return k.map((x) => {
    const top = new Set(ranked.slice(0, x));
    return evidence.filter((e) => top.has(e)).length / evidence.length;
  });
}

const pct = (value: number) => Math.round(1000 * value) / 10;
const recallRecord = (k: readonly number[], means: readonly number[]) => Object.fromEntries(k.map((x, i) => [`@${x}`, pct(means[i] ?? 0)]));

/** Mean figures over items, overall and by category. */
export function summarize(k: readonly number[], measured: ReadonlyArray<{ category: number; figures: readonly number[] }>): CvFigures {
  const mean = (rows: typeof measured) => k.map((_, i) => rows.reduce((s, r) => s + r.figures[i]!, 0) / Math.max(1, rows.length));
  const categories = [...new Set(measured.map((m) => m.category))].sort((a, b) => a - b);
  return {
    questions: measured.length,
    recall: recallRecord(k, mean(measured)),
    byCategory: Object.fromEntries(
      categories.map((c) => {
        const rows = measured.filter((m) => m.category === c);
        return [String(c), { questions: rows.length, recall: recallRecord(k, mean(rows)) }];
      }),
    ),
  };
}

/**
 * Cross-validates the tunable weights over the cached questions. The objective is the mean of
 * recall@5 and recall@10 (the figures the targets name).
 */
export async function evaluateLocomoCv(params: {
  questions: readonly CachedQuestion[];
  turns: ReadonlyMap<string, TurnsByPosition>;
  defaults: SearchWeights;
  radius: number;
  k: readonly number[];
  grid?: ParamGrid;
  onProgress?: (measurements: number) => void;
}): Promise<CvReport> {
  const started = Date.now();
  const { k, defaults, radius } = params;
  const grid = params.grid ?? CV_GRID;
  const maxK = Math.max(...k, 10);
  const i5 = k.indexOf(5);
  const i10 = k.indexOf(10);
  let count = 0;
  const measure = async (point: GridPoint, q: CachedQuestion) => {
    const ranked = await rankCached(q, params.turns.get(q.group)!, { ...defaults, ...point }, radius, maxK);
    if (++count % 5000 === 0) params.onProgress?.(count);
    return recallAt(ranked, q.evidence, k);
  };
  const start = gridMiddle(grid);
  const current: GridPoint = Object.fromEntries(Object.keys(grid).map((name) => [name, defaults[name as keyof SearchWeights]]));
  const outcome = await crossValidate({
    items: params.questions,
    grid,
    start,
    measure,
    rounds: 2,
    objective: (means) => (i5 >= 0 && i10 >= 0 ? (means[i5]! + means[i10]!) / 2 : means.reduce((a, b) => a + b, 0) / means.length),
  });
  const replicaFigures: Array<{ category: number; figures: readonly number[] }> = [];
  for (const q of params.questions) replicaFigures.push({ category: q.category, figures: await measure(current, q) });
  const onAllFigures: Array<{ category: number; figures: readonly number[] }> = [];
  for (const q of params.questions) onAllFigures.push({ category: q.category, figures: await measure(outcome.onAll, q) });
  const heldOut = outcome.folds.flatMap((fold) => fold.measured.map(({ item, figures }) => ({ category: item.category, figures })));
  return {
    ...summarize(k, heldOut),
    replica: summarize(k, replicaFigures).recall,
    folds: outcome.folds.map((fold) => ({
      heldOut: fold.heldOut,
      questions: fold.measured.length,
      weights: fold.point,
      recall: summarize(
        k,
        fold.measured.map(({ item, figures }) => ({ category: item.category, figures })),
      ).recall,
    })),
    tunedOnAll: { weights: outcome.onAll, recall: summarize(k, onAllFigures).recall },
    grid,
    pointsMeasured: outcome.points,
    seconds: (Date.now() - started) / 1000,
  };
}

/**
 * Gathers every question's candidates (one `turnCandidates` call each, the indexes' work) and
 * every turn of each conversation's scope, for {@link evaluateLocomoCv}.
 */
export async function cacheCandidates(params: {
  conversations: readonly LocomoConversation[];
  search: InspectableSearch;
  scopeIdOf: (key: string) => Promise<string>;
  scopeRows: (scopeId: string) => Promise<EpisodeSearchRow[]>;
  onProgress?: (done: number, total: number) => void;
}): Promise<{ questions: CachedQuestion[]; turns: Map<string, TurnsByPosition> }> {
  const questions: CachedQuestion[] = [];
  const turns = new Map<string, TurnsByPosition>();
  const total = params.conversations.reduce((n, c) => n + c.questions.length, 0);
  for (const conversation of params.conversations) {
    const scopeId = await params.scopeIdOf(`locomo:${conversation.id}`);
    turns.set(conversation.id, turnsByPosition(await params.scopeRows(scopeId)));
    for (const q of conversation.questions) {
      const candidates = await params.search.turnCandidates({ scopeId, semanticQuery: q.question, kinds: ['episode'] });
      questions.push({ group: conversation.id, question: q.question, category: q.category, evidence: q.evidence, candidates });
      if (questions.length % 100 === 0) params.onProgress?.(questions.length, total);
    }
  }
  return { questions, turns };
}
