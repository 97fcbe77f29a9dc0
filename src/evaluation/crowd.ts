/**
 * A crowd of synthetic episodes around an evaluation or a benchmark: N episodes in S scopes of
 * other people, so retrieval is measured in a full store rather than an empty one.
 *
 * Embedding a million texts would take days here, so the crowd re-mixes real turns: each crowd
 * episode is a real turn's text with its real vector plus a little noise (cosine ~0.95 to the
 * original), in conversations of 20 turns between other speakers (the source conversation's names
 * in the text are replaced by theirs), on other dates. Text and vector statistics are realistic;
 * what a crowd episode says is not meant to answer anything.
 *
 * Nothing here knows the database: the episodes and their vectors go through {@link CrowdStore}.
 */
import { normalizeVector } from '../memory/embeddings/embedder';
import { seededRandom } from '../shared/seeded-random';

/** A real turn the crowd copies: its text, the names of its conversation's speakers, its vector. */
export interface CrowdSourceTurn {
  readonly content: string;
  readonly speakers: readonly string[];
  readonly vector: Float32Array;
}

/** One synthetic episode, before it is stored. */
export interface CrowdEpisode {
  readonly content: string;
  readonly author: string;
  readonly externalId: string;
  readonly conversationId: string;
  readonly timestamp: Date;
}

/** Where the crowd goes: the real store, through the same paths as any import. */
export interface CrowdStore {
  /** Stores a batch of one scope's episodes; returns the scope's id and the new episodes' ids, in order. */
  ingest(scopeKey: string, episodes: readonly CrowdEpisode[]): Promise<{ scopeId: string; ids: string[] }>;
  /** Stores the vectors of those episodes and marks them embedded (the embedding worker leaves them). */
  attachVectors(scopeId: string, vectors: ReadonlyArray<{ id: string; vector: Float32Array }>): Promise<void>;
}

/** A crowd scope once loaded. */
export interface CrowdScope {
  readonly key: string;
  readonly id: string;
  readonly size: number;
}

export interface CrowdReport {
  readonly episodes: number;
  readonly scopes: number;
  readonly largestScope: number;
  readonly loadSeconds: number;
  readonly episodesPerSecond: number;
}

/** Episodes per stored batch: one transaction each, and the most the loader holds at a time. */
const BATCH = 1_000;
const TURNS_PER_CONVERSATION = 20;
const MINUTES_BETWEEN_TURNS = 3;
/** Half-width of the uniform noise added to each coordinate (cosine ~0.95 to the source at 512-d). */
const NOISE = 0.01;
/** Scope sizes vary between these fractions of the mean (deterministic for a seed). */
const SIZE_SPREAD: readonly [number, number] = [0.5, 1.5];
const FIRST_DAY = Date.UTC(2019, 0, 1);
const DAYS = 6 * 365;
const DAY_MS = 86_400_000;
const NAMES = [
  'Amara',
  'Bruno',
  'Chloe',
  'Dmitri',
  'Esme',
  'Farid',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Keiko',
  'Liam',
  'Maya',
  'Nils',
  'Olga',
  'Pablo',
  'Quinn',
  'Rosa',
  'Sami',
  'Tara',
  'Umar',
  'Vera',
  'Wes',
  'Xenia',
  'Yusuf',
  'Zoe',
  'Aiko',
  'Bram',
  'Cleo',
  'Dario',
  'Elif',
  'Femi',
  'Gil',
  'Hedda',
  'Ivan',
  'Jade',
  'Kofi',
  'Lena',
  'Marco',
  'Nadia',
];

/**
 * Sizes of `scopes` scopes holding `episodes` in all: with `largest`, the first scope holds that
 * many and the rest share the remainder; sizes vary (x0.5 to x1.5 of the mean), none is empty.
 */
export function planCrowdScopes(params: { episodes: number; scopes: number; largest?: number; seed?: number }): number[] {
  const { episodes, scopes } = params;
  if (!Number.isInteger(episodes) || !Number.isInteger(scopes) || scopes < 1 || scopes > episodes) {
    throw new RangeError(`a crowd needs 1 <= scopes <= episodes (got ${scopes} scopes, ${episodes} episodes)`);
  }
  const largest = params.largest === undefined || scopes === 1 ? undefined : Math.min(params.largest, episodes - (scopes - 1));
  const rest = largest === undefined ? episodes : episodes - largest;
  const count = largest === undefined ? scopes : scopes - 1;
  const rand = seededRandom(params.seed ?? 1);
  const weights = Array.from({ length: count }, () => SIZE_SPREAD[0] + rand() * (SIZE_SPREAD[1] - SIZE_SPREAD[0]));
  const total = weights.reduce((a, b) => a + b, 0);
  // One episode each first, then the rest in proportion to the weights; rounding leftovers go round.
  const spare = rest - count;
  const sizes = weights.map((w) => 1 + Math.floor((spare * w) / total));
  let left = rest - sizes.reduce((a, b) => a + b, 0);
  for (let i = 0; left > 0; i = (i + 1) % count, left--) sizes[i]! += 1;
  return largest === undefined ? sizes : [largest, ...sizes];
}

/** Replaces each source speaker's name in the text by the crowd speaker at the same position. */
function renamed(text: string, from: readonly string[], to: readonly string[]): string {
  let out = text;
  from.forEach((name, i) => {
    if (name) out = out.split(name).join(to[i % to.length]!);
  });
  return out;
}

/** The real turn's vector plus a little noise, of unit length. */
function noisy(vector: Float32Array, rand: () => number): Float32Array {
  const v = new Float32Array(vector.length);
  for (let d = 0; d < v.length; d++) v[d] = vector[d]! + (rand() * 2 - 1) * NOISE;
  return normalizeVector(v);
}

/**
 * Writes the crowd through `store`, scope after scope (keys `crowd:0`, `crowd:1`, ...), in batches
 * of 1,000 episodes with their vectors; holds at most one batch in memory.
 */
export async function loadCrowd(params: {
  store: CrowdStore;
  sources: readonly CrowdSourceTurn[];
  sizes: readonly number[];
  seed?: number;
  onProgress?: (done: number, total: number) => void;
}): Promise<{ report: CrowdReport; scopes: CrowdScope[] }> {
  const { store, sources, sizes } = params;
  if (sources.length === 0) throw new RangeError('a crowd needs at least one real turn to copy');
  const rand = seededRandom(params.seed ?? 7);
  const total = sizes.reduce((a, b) => a + b, 0);
  const started = performance.now();
  const scopes: CrowdScope[] = [];
  let done = 0;
  for (const [s, size] of sizes.entries()) {
    const key = `crowd:${s}`;
    const firstDay = FIRST_DAY + Math.floor(rand() * DAYS) * DAY_MS;
    let scopeId = '';
    for (let start = 0; start < size; start += BATCH) {
      const picks: CrowdSourceTurn[] = [];
      const episodes: CrowdEpisode[] = [];
      for (let i = start; i < Math.min(size, start + BATCH); i++) {
        const conversation = Math.floor(i / TURNS_PER_CONVERSATION);
        const pair = [NAMES[(s + conversation) % NAMES.length]!, NAMES[(s * 7 + conversation * 3 + 1) % NAMES.length]!];
        const source = sources[Math.floor(rand() * sources.length)]!;
        picks.push(source);
        episodes.push({
          content: renamed(source.content, source.speakers, pair),
          author: pair[i % 2]!,
          externalId: `crowd-${s}-${i}`,
          conversationId: `c${conversation}`,
          timestamp: new Date(firstDay + conversation * DAY_MS + (i % TURNS_PER_CONVERSATION) * MINUTES_BETWEEN_TURNS * 60_000),
        });
      }
      const stored = await store.ingest(key, episodes);
      scopeId = stored.scopeId;
      await store.attachVectors(
        scopeId,
        stored.ids.map((id, j) => ({ id, vector: noisy(picks[j]!.vector, rand) })),
      );
      done += episodes.length;
      params.onProgress?.(done, total);
    }
    scopes.push({ key, id: scopeId, size });
  }
  const loadSeconds = (performance.now() - started) / 1000;
  return {
    report: {
      episodes: total,
      scopes: sizes.length,
      largestScope: Math.max(...sizes),
      loadSeconds: Math.round(loadSeconds * 10) / 10,
      episodesPerSecond: Math.round(total / Math.max(loadSeconds, 1e-3)),
    },
    scopes,
  };
}
