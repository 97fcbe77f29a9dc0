/**
 * The restatement rule of every memory write: a fact the scope already holds, said again in new
 * words, is the same knowledge, so the writer reinforces the memory that holds it (or revises it
 * when the new wording adds a name or a number) instead of storing a second row. A model that
 * files "Dana really enjoys drinking black coffee" as new on the second night and "Dana's
 * favourite drink is black coffee" on the third leaves one memory, confirmed three times.
 *
 * Two signals must agree, because cosine alone cannot tell a restatement from a changed value:
 * - meaning: the configured embedder's cosine to a current memory is at least
 *   {@link RESTATEMENT_SIMILARITY} (measured on the local USE-lite model: paraphrases score
 *   0.81-0.93, while "lives in Berlin" / "lives in Munich" and "has a dog named Biscuit" / "has a
 *   cat named Biscuit" score 0.89);
 * - words: the two share a key word, have the same polarity (a negation on one side only is a
 *   different statement), and are not the same sentence with one word swapped for another
 *   (Berlin for Munich, dog for cat: that is an update or a contradiction, the model's call).
 *
 * Missing a restatement costs a second row (the dreaming phase folds it later, see
 * `mergeRestatements` in sleep/dreaming.ts); merging two different facts loses one, so the rule leans to "new".
 * The vectors come from before the transaction ({@link findNeighbours}, the embedder is async and
 * outside the database); without them only a memory with the very same key words counts.
 */
import { isKnowledge } from './categories';
import type { Embedder } from '../embeddings/embedder';
import type { VectorIndex } from '../vectors/vector-index';

/** Cosine at or above which two memories may be the same fact (with the word rules below). */
export const RESTATEMENT_SIMILARITY = 0.88;
/** Current memories compared with each candidate. */
const NEIGHBOURS = 5;

/** A current memory near a candidate in the vector index, with its cosine. */
export interface Neighbour {
  readonly id: string;
  readonly score: number;
}

const STOP_WORDS = new Set(
  (
    'a an the and or but of to in on at for with by from as is are was were be been being has have had do does did it its this that these those ' +
    'user owner person they them their he him his she her really very quite just also so than then there who whom which what ' +
    // Framing around a value, not the value: "has a dog named Milo" is "owns a dog, Milo".
    'into named called owns own'
  ).split(' '),
);
/**
 * Verbs that frame the same relation in other words, compared as one: "enjoys pottery", "loves
 * pottery" and "pottery is a hobby" say one thing; "lives in Denver" and "resides in Denver" too;
 * "works as a chef", "is employed as a chef" and "is a chef by profession" as well.
 * A swap between classes ("likes Denver" / "lives in Denver") is still a swapped word.
 */
const SAME_RELATION = new Map<string, string>(
  Object.entries({
    like: 'enjoys enjoy enjoyed likes like liked loves love loved adores fan favourite favorite hobby passion keen',
    live: 'lives live living lived resides reside residing based',
    play: 'plays play playing practices practice practises practising',
    work: 'works work working worked employed job profession occupation career',
  }).flatMap(([relation, verbs]) => verbs.split(' ').map((verb) => [verb, `~${relation}`] as const)),
);
const NEGATIONS = new Set(['not', 'no', 'never', 'none', 'nobody', 'nothing', 'neither', 'nor', 'without', 'dislikes', 'hates', 'cannot']);

/** Letters a key word is compared on: a crude stem, so "peanut" meets "peanuts" and "allergic" meets "allergy". */
const STEM = 5;

function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/['’]s\b/g, '')
    .replace(/n['’]t\b/g, ' not')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => /\p{N}/u.test(w) || (w.length > 1 && !STOP_WORDS.has(w)));
}

/** A word as compared: numbers and words holding digits whole ("9" is not "10"), others on their first letters. */
function stem(word: string): string {
  return SAME_RELATION.get(word) ?? (/\p{N}/u.test(word) ? word : word.slice(0, STEM));
}

/** The words of a text that carry its meaning: lower-cased, possessive `'s` dropped, stop words out, stemmed. */
export function keyWords(text: string): Set<string> {
  return new Set(words(text).map(stem));
}

function negated(text: string): boolean {
  return words(text).some((w) => NEGATIONS.has(w));
}

/**
 * Categories a restatement may cross: the same one, or either side filed as a plain `fact` (a
 * model files "loves black coffee" as a preference one night and a fact the next), or the
 * preference/interest pair.
 */
export function compatibleCategories(a: string, b: string): boolean {
  if (a === b) return true;
  // A conversation's summary is not knowledge: a fact is never folded into one, nor one into a fact.
  if (!isKnowledge(a) || !isKnowledge(b)) return false;
  if (a === 'fact' || b === 'fact') return true;
  const pair = new Set([a, b]);
  return pair.has('preference') && pair.has('interest');
}

/** Whether `candidate` says what `existing` says (`cosine` from the embedder, or undefined without one). */
export function isRestatement(candidate: string, existing: string, cosine: number | undefined): boolean {
  const a = keyWords(candidate);
  const b = keyWords(existing);
  if (a.size === 0 || b.size === 0) return false;
  const onlyA = [...a].filter((w) => !b.has(w));
  const onlyB = [...b].filter((w) => !a.has(w));
  if (onlyA.length === 0 && onlyB.length === 0) return true;
  if (cosine === undefined || cosine < RESTATEMENT_SIMILARITY) return false;
  if (onlyA.length === a.size) return false;
  if (negated(candidate) !== negated(existing)) return false;
  return !(onlyA.length === 1 && onlyB.length === 1);
}

/**
 * Whether a restatement adds information the memory lacks: a name or a number ("The user has a
 * dog" -> "The user has a dog named Biscuit"). Then it revises the memory (the old wording stays
 * as history) rather than only confirming it.
 */
export function addsInformation(candidate: string, existing: string): boolean {
  const known = keyWords(existing);
  const specific = candidate
    .replace(/['’]s\b/g, '')
    .split(/[^\p{L}\p{N}]+/u)
    .slice(1)
    .filter((w) => /^\p{Lu}/u.test(w) || /\p{N}/u.test(w));
  return specific.some((w) => !known.has(stem(w.toLowerCase())));
}

/**
 * The current memories of a scope nearest to each text, at cosine >= {@link RESTATEMENT_SIMILARITY},
 * for the writer's restatement rule. Runs before the transaction; an embedder or index that fails
 * leaves the lists empty (the word rule still holds) instead of failing the write.
 */
export async function findNeighbours(deps: { embedder?: Embedder; index?: VectorIndex }, scopeId: string, texts: readonly string[]): Promise<Neighbour[][]> {
  const none = texts.map(() => [] as Neighbour[]);
  if (!deps.embedder || !deps.index || texts.length === 0) return none;
  try {
    const vectors = await deps.embedder.embed(texts);
    const out: Neighbour[][] = [];
    for (const vector of vectors) {
      const hits = await deps.index.search({ scopeId, vector, limit: NEIGHBOURS, kind: 'memory' });
      out.push(hits.filter((h) => h.score >= RESTATEMENT_SIMILARITY).map((h) => ({ id: h.id, score: h.score })));
    }
    return out;
  } catch {
    return none;
  }
}
