/**
 * How the simulated model "understands" a person's message: it matches each sentence against the
 * ways the simulated people say things (people.ts), giving the fact kind and value. It is the
 * double's reading comprehension, nothing more: what it then writes (and how badly) is decided in
 * misbehaving-model.ts.
 */
import { ALL_KINDS, type FactKind } from './people';

export interface Recognized {
  readonly kind: FactKind;
  readonly value: string;
  /** Whether the sentence announced a change (a new job, a move). */
  readonly change: boolean;
}

interface Pattern {
  readonly kind: FactKind;
  readonly regex: RegExp;
  readonly change: boolean;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function toPattern(kind: FactKind, template: string, change: boolean): Pattern {
  const [before, after] = template.replace(/[.!?]$/, '').split('{v}');
  return { kind, regex: new RegExp(`^${escape(before ?? '')}(.+?)${escape(after ?? '')}$`), change };
}

const PATTERNS: readonly Pattern[] = ALL_KINDS.flatMap((kind) => [
  ...(kind.changed ?? []).map((t) => toPattern(kind, t, true)),
  ...kind.said.map((t) => toPattern(kind, t, false)),
]);

/** The sentences of a message, end punctuation removed. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim().replace(/[.!?]$/, ''))
    .filter((s) => s !== '');
}

/** The facts a message states (none for small talk). */
export function recognize(text: string): Recognized[] {
  const out: Recognized[] = [];
  for (const sentence of sentences(text)) {
    for (const pattern of PATTERNS) {
      const match = pattern.regex.exec(sentence);
      if (match && (pattern.kind.key === 'event' || pattern.kind.values.includes(match[1]!))) {
        out.push({ kind: pattern.kind, value: match[1]!, change: pattern.change });
        break;
      }
    }
  }
  return out;
}
