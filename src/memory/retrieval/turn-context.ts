/**
 * What a turn's surroundings lend its score in hybrid search: the best neighbouring turn's
 * relevance (`context`), the keyword coverage of the passage around it (`passage`), and how well
 * its whole conversation matches the query (`session`).
 *
 * Why: in a chat the answer is often the turn after the question ("what did she paint?" … "a
 * sunset"), and a turn in the conversation that best matches the query is more likely to be about
 * the same thing than an equally scored turn elsewhere. Neighbours of the strongest candidates
 * also join the pool, read by position.
 */
import type { EpisodeSearchRow } from '../../storage/episode-repository';
import type { Scored, SearchWeights } from './search-scoring';

/** Candidates whose neighbouring turns are read into the pool, best first. */
const NEIGHBOURED_CANDIDATES = 50;

/** What {@link lendTurnContext} works on. */
export interface TurnContextParams {
  /** The scored episodes by id; neighbours read here are added to it. */
  readonly scored: Map<string, Scored>;
  /** Each turn's own relevance (its semantic and keyword parts, weighted): what neighbours lend. */
  readonly relevance: ReadonlyMap<string, number>;
  /** The query's words, and each keyword candidate's BM25 per word, for the passage coverage. */
  readonly terms: readonly string[];
  readonly termScores: ReadonlyMap<string, readonly number[]>;
  readonly weights: SearchWeights;
  /** Turns on each side that count as neighbours. */
  readonly radius: number;
  /** Reads the turns at these positions (of the query's scope). */
  readonly atTurns: (positions: Array<{ conversationId: string; turn: number }>) => Promise<EpisodeSearchRow[]>;
  /** Scores a turn read as a neighbour the way the candidates were scored (and records its relevance). */
  readonly score: (row: EpisodeSearchRow) => Scored;
}

/** Adds the `context` and `passage` parts (reading missing neighbours first) to every scored turn. */
export async function lendTurnContext(params: TurnContextParams): Promise<void> {
  const { scored, relevance, terms, termScores, weights, radius } = params;
  if (!((weights.context > 0 || weights.passage > 0) && radius > 0)) return;
  const byPosition = new Map<string, Scored>();
  const place = (s: Scored) => {
    const e = s.episode;
    if (e?.conversationId && e.turn !== null) byPosition.set(`${e.conversationId}#${e.turn}`, s);
  };
  for (const s of scored.values()) place(s);
  const missing: Array<{ conversationId: string; turn: number }> = [];
  for (const s of [...scored.values()].sort((a, b) => b.base - a.base).slice(0, NEIGHBOURED_CANDIDATES)) {
    const e = s.episode!;
    if (!e.conversationId || e.turn === null) continue;
    for (let d = -radius; d <= radius; d++) {
      if (d !== 0 && e.turn + d >= 0 && !byPosition.has(`${e.conversationId}#${e.turn + d}`)) {
        missing.push({ conversationId: e.conversationId, turn: e.turn + d });
      }
    }
  }
  for (const row of missing.length > 0 ? await params.atTurns(missing) : []) {
    if (scored.has(row.id)) continue;
    const s = params.score(row);
    scored.set(row.id, s);
    place(s);
  }
  for (const s of weights.context > 0 ? scored.values() : []) {
    const e = s.episode!;
    if (!e.conversationId || e.turn === null) continue;
    let best = 0;
    for (let d = -radius; d <= radius; d++) {
      if (d === 0) continue;
      const neighbour = byPosition.get(`${e.conversationId}#${e.turn + d}`);
      if (neighbour) best = Math.max(best, relevance.get(neighbour.id) ?? 0);
    }
    s.parts.context = best;
  }
  for (const s of scored.values()) s.base += weights.context * (s.parts.context ?? 0);

  if (weights.passage > 0 && terms.length > 0) {
    const coverage = new Map<string, number>();
    for (const s of scored.values()) {
      const e = s.episode!;
      if (!e.conversationId || e.turn === null) continue;
      const best = new Array<number>(terms.length).fill(0);
      for (let d = -radius; d <= radius; d++) {
        const neighbour = byPosition.get(`${e.conversationId}#${e.turn + d}`);
        const scores = neighbour && termScores.get(neighbour.id);
        if (scores) scores.forEach((v, t) => (best[t] = Math.max(best[t]!, v)));
      }
      coverage.set(
        s.id,
        best.reduce((a, b) => a + b, 0),
      );
    }
    const top = Math.max(0, ...coverage.values());
    for (const [id, value] of coverage) {
      const s = scored.get(id)!;
      s.parts.passage = top > 0 ? value / top : 0;
      s.base += weights.passage * s.parts.passage;
    }
  }
}

/** Adds the `session` part: the turn's conversation's best relevance, relative to the best conversation's. */
export function addSessionRelevance(scored: ReadonlyMap<string, Scored>, relevance: ReadonlyMap<string, number>, weights: SearchWeights): void {
  if (!(weights.session > 0)) return;
  const bestOf = new Map<string, number>();
  for (const s of scored.values()) {
    const c = s.episode!.conversationId;
    if (c) bestOf.set(c, Math.max(bestOf.get(c) ?? 0, relevance.get(s.id) ?? 0));
  }
  const top = Math.max(0, ...bestOf.values());
  for (const s of scored.values()) {
    const c = s.episode!.conversationId;
    if (!c || top <= 0) continue;
    s.parts.session = bestOf.get(c)! / top;
    s.base += weights.session * s.parts.session;
  }
}
