/**
 * Short ids for prompts: the model sees "E3" and "M7", never a UUID (shorter prompts, fewer
 * copying mistakes). The map turns them back; a number the prompt did not show resolves to
 * undefined and the planner rejects the operation that used it.
 *
 * A prompt that shows two kinds of things numbers each kind with its own letter (issue 15):
 * memories `M1, M2, ...`, episodes `E1, E2, ...`. Both counts start at 1, so a bare "3" could
 * name either; an episode number written where a memory belongs used to edit the memory that
 * happened to have the same number. The letter travels with the id through the answer
 * ({@link IdRef}) so the planner can refuse an id of the wrong kind.
 */
export class ShortIds {
  private readonly toReal: string[] = [];
  private readonly toShort = new Map<string, number>();

  /** The short number of a real id, assigning the next one on first sight. */
  add(realId: string): number {
    const known = this.toShort.get(realId);
    if (known !== undefined) return known;
    this.toReal.push(realId);
    this.toShort.set(realId, this.toReal.length);
    return this.toReal.length;
  }

  real(short: number): string | undefined {
    return Number.isInteger(short) && short >= 1 ? this.toReal[short - 1] : undefined;
  }

  short(realId: string): number | undefined {
    return this.toShort.get(realId);
  }

  get size(): number {
    return this.toReal.length;
  }
}

/** The letter of a prompt id: `M` a memory, `E` an episode. */
export type IdKind = 'M' | 'E';

/** An id as the model wrote it: its kind (null for a bare number) and its number. */
export interface IdRef {
  readonly kind: IdKind | null;
  readonly n: number;
}

/** How an id of `kind` is written in a prompt and in the answer: `M3`, `E5`. */
export function idLabel(kind: IdKind, n: number): string {
  return `${kind}${n}`;
}

/** How the model wrote an id, for refusal reasons: `M3`, `E5`, or a bare `3`. */
export function refLabel(ref: IdRef): string {
  return ref.kind ? idLabel(ref.kind, ref.n) : String(ref.n);
}

const REF = /^\s*(?:([me])\s*[-#:]?\s*)?(\d{1,9})\s*$/i;

/**
 * An id from an answer: `"M3"`, `"E5"` (any case, `"E-5"`, `"m 3"`), or a bare `3` / `"3"`
 * (kind null: the planner decides what a bare number may mean where). Undefined for anything
 * else (a word, a fraction, a negative number).
 */
export function parseIdRef(value: unknown): IdRef | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? { kind: null, n: value } : undefined;
  if (typeof value !== 'string') return undefined;
  const match = REF.exec(value);
  if (!match) return undefined;
  return { kind: match[1] ? (match[1].toUpperCase() as IdKind) : null, n: Number(match[2]) };
}
