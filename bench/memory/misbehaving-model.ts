/**
 * The model of the memory hygiene benchmark: a responder for the loopback Anthropic server
 * (test/doubles/anthropic-server.ts) that answers each kind of request the service makes, the way
 * real models do, mistakes included. It reads the prompt text (episodes `[n]`, memories `(n)`) to
 * know what it was shown and recognizes the person's facts with recognizer.ts.
 *
 * Consolidation: a new memory for each fact it reads and a reinforcement when a shown memory
 * already says it; an update when a shown memory says an older value. Its mistakes, each at a
 * seeded rate (see {@link DEFAULT_MISBEHAVIOUR}): a known fact restated in new words as `new`; a
 * shown memory re-extracted word for word; a small-talk turn turned into a filler memory; a
 * placeholder content; a field left out; an episode number cited as a memory number; a memory
 * about the assistant from the assistant's turn; an answer cut off (stop_reason max_tokens); a
 * value of the wrong type (a confidence written as a word), which only a model without the answer
 * schema can make: with the schema on the wire (structured outputs), the model keeps to it, as a
 * constrained decoder does, and that mistake is not made.
 *
 * Each answer draws from a generator seeded by the seed and the prompt, so the same prompt gets
 * the same answer whatever order requests arrive in (a model at temperature 0).
 *
 * Every request is counted on the wire: its body's characters / 4, by purpose.
 */
import type { LlmResponder, ScriptedLlmReply, SeenLlmRequest } from '../../test/doubles/llm-script';
import { fnv1a } from '../../src/vectors/embedders/hash-embedder';
import { createRng, fill, type FactKind, type Rng } from './people';
import { recognize } from './recognizer';

/** Rates of the model's mistakes (per item unless said). */
export interface Misbehaviour {
  /** A fact a shown memory already says, written as `new` in other words instead of reinforced. */
  readonly restateAsNew: number;
  /** Per consolidation call: one shown memory written again, word for word, as `new`. */
  readonly reextract: number;
  /** A small-talk turn of the person turned into a memory ("The user said ..."). */
  readonly filler: number;
  /** A new memory whose content is a placeholder ("..." or "<fact>"). */
  readonly placeholder: number;
  /** An operation with a field left out (its evidence or its confidence). */
  readonly omitField: number;
  /** A reinforcement or update naming an episode's E-id where its memory's M-id belongs (the planner refuses it). */
  readonly wrongId: number;
  /** Per consolidation call: a memory about the assistant, citing the assistant's turn. */
  readonly aboutAssistant: number;
  /** Per consolidation call: the answer cut off halfway (stop_reason max_tokens). */
  readonly cutOff: number;
  /** A changed fact (new job, move) written as `new` instead of updating the old memory. */
  readonly changeAsNew: number;
  /**
   * Per consolidation call, only when no answer schema was sent: a confidence written as a word
   * ("high"), which the schema check refuses and a repair call fixes.
   */
  readonly wrongType: number;
}

export const DEFAULT_MISBEHAVIOUR: Misbehaviour = {
  restateAsNew: 0.3,
  reextract: 0.15,
  filler: 0.1,
  placeholder: 0.03,
  omitField: 0.05,
  wrongId: 0.04,
  aboutAssistant: 0.05,
  cutOff: 0.03,
  changeAsNew: 0.4,
  wrongType: 0.05,
};

export type Purpose = 'reply' | 'consolidation' | 'conversation-end' | 'summary' | 'flush' | 'entities' | 'capped' | 'other';

export interface WireCall {
  readonly purpose: Purpose;
  /** Body characters / 4, rounded up. */
  readonly tokens: number;
  /** A repair call: the model's own answer sent back with what was wrong with it. */
  readonly repair?: boolean;
}

export interface MisbehavingModel {
  readonly responder: LlmResponder;
  /** Every request, in order. */
  readonly calls: WireCall[];
  /** Mistakes made, by name (what the model did, not what the service kept). */
  readonly mistakes: Record<string, number>;
  /**
   * Reply requests' bodies (JSON) while `capturing` is true, so the simulation can read the prompt
   * a question's reply was built from (kept only then: all of them would be hundreds of MB).
   */
  readonly captured: { capturing: boolean; replies: string[] };
}

const SYSTEM_MARKS: ReadonlyArray<[string, Purpose]> = [
  ['memory consolidation system', 'consolidation'],
  ['conversation that just ended', 'conversation-end'],
  ['running summary of a conversation', 'summary'],
  ['about to leave the assistant', 'flush'],
  ['You maintain profiles of', 'entities'],
  ['memory sub-agent', 'capped'],
];

export function purposeOf(request: Pick<SeenLlmRequest, 'system' | 'tools'>): Purpose {
  const system = request.system ?? '';
  for (const [mark, purpose] of SYSTEM_MARKS) if (system.includes(mark)) return purpose;
  return request.tools.length > 0 || system.includes('long-term memory') ? 'reply' : 'other';
}

/** `n` is the id as the prompt shows it ("E3", "M2"), written back as it is. */
interface ShownEpisode {
  readonly n: string;
  readonly user: boolean;
  readonly text: string;
}
interface ShownMemory {
  readonly n: string;
  readonly content: string;
}

const EPISODE_LINE = /^(E\d+) \S+ \S+ (user|agent)[^:]*: (.*)$/gm;
const MEMORY_LINE = /^(M\d+) \[[^\]]*\] (.*)$/gm;
const PLACEHOLDERS = ['...', '<fact>'];
const REPLIES = ['Got it, thanks for telling me.', 'That sounds nice!', 'I hear you. Anything I can help with?', 'Noted. How did that go?', 'Haha, fair.'];

export function createMisbehavingModel(params: { seed: number; rates?: Partial<Misbehaviour> }): MisbehavingModel {
  const rates: Misbehaviour = { ...DEFAULT_MISBEHAVIOUR, ...params.rates };
  let rng: Rng = createRng(params.seed);
  const calls: WireCall[] = [];
  const mistakes: Record<string, number> = {};
  const captured = { capturing: false, replies: [] as string[] };
  /** What each memory the model wrote says, so it knows a shown memory (as a model reads one). */
  const written = new Map<string, { key: string; value: string }>();
  const count = (name: string) => (mistakes[name] = (mistakes[name] ?? 0) + 1);

  function phrase(kind: FactKind, value: string, not?: string): string {
    const options = kind.remembered.map((t) => fill(t, value)).filter((c) => c !== not);
    const content = rng.pick(options.length > 0 ? options : kind.remembered.map((t) => fill(t, value)));
    written.set(content, { key: kind.key, value });
    return content;
  }

  function consolidate(prompt: string, constrained: boolean): ScriptedLlmReply {
    const episodes: ShownEpisode[] = [...prompt.matchAll(EPISODE_LINE)].map((m) => ({ n: m[1]!, user: m[2] === 'user', text: m[3]! }));
    const memories: ShownMemory[] = [...prompt.matchAll(MEMORY_LINE)].map((m) => ({ n: m[1]!, content: m[2]! }));
    const fresh: Record<string, unknown>[] = [];
    const reinforce: Record<string, unknown>[] = [];
    const update: Record<string, unknown>[] = [];
    const entities: Record<string, unknown>[] = [];
    const emitted = new Map<string, Record<string, unknown> & { episodes: string[] }>();
    const memoryOf = (m: ShownMemory) => written.get(m.content);
    const memoryNumber = (n: string, e: ShownEpisode) => (rng.chance(rates.wrongId) ? (count('wrongId'), e.n) : n);
    const addNew = (e: ShownEpisode, category: string, content: string) => {
      const item = { category, content, confidence: 0.9, source: 'stated', episodes: [e.n] };
      fresh.push(item);
      return item;
    };
    for (const e of episodes.filter((x) => x.user)) {
      const facts = recognize(e.text);
      if (facts.length === 0 && rng.chance(rates.filler)) {
        count('filler');
        addNew(e, 'fact', `The user said: "${e.text}"`);
      }
      for (const fact of facts) {
        const id = `${fact.kind.key}=${fact.value}`;
        const already = emitted.get(id);
        if (already) {
          already.episodes.push(e.n);
          continue;
        }
        const same = memories.find((m) => memoryOf(m)?.key === fact.kind.key && memoryOf(m)?.value === fact.value);
        const older = fact.kind.changed ? memories.find((m) => memoryOf(m)?.key === fact.kind.key && memoryOf(m)?.value !== fact.value) : undefined;
        if (same && !rng.chance(rates.restateAsNew)) {
          reinforce.push({ memory: memoryNumber(same.n, e), episodes: [e.n], reason: 'said again' });
          continue;
        }
        if (same) count('restateAsNew');
        if (older && !same && !rng.chance(rates.changeAsNew)) {
          const item = { memory: memoryNumber(older.n, e), content: phrase(fact.kind, fact.value), episodes: [e.n], reason: 'changed' };
          update.push(item);
          emitted.set(id, item);
          continue;
        }
        if (older && !same) count('changeAsNew');
        const item = addNew(e, fact.kind.category, phrase(fact.kind, fact.value, same?.content));
        emitted.set(id, item);
        if (['partner', 'dog', 'sister'].includes(fact.kind.key)) {
          entities.push({ name: fact.value, kind: fact.kind.key === 'dog' ? 'pet' : 'person', observations: [`the user's ${fact.kind.key}`], episodes: [e.n] });
        }
      }
    }
    const firstUser = episodes.find((e) => e.user);
    const known = memories.filter((m) => memoryOf(m));
    if (firstUser && known.length > 0 && rng.chance(rates.reextract)) {
      count('reextract');
      addNew(firstUser, 'fact', rng.pick(known).content);
    }
    const agentTurn = episodes.find((e) => !e.user);
    if (agentTurn && rng.chance(rates.aboutAssistant)) {
      count('aboutAssistant');
      addNew(agentTurn, 'fact', `The assistant told the user: ${agentTurn.text.slice(0, 60)}`);
    }
    for (const item of fresh) {
      if (rng.chance(rates.placeholder)) {
        count('placeholder');
        item.content = rng.pick(PLACEHOLDERS);
      }
    }
    for (const item of [...fresh, ...reinforce, ...update]) {
      if (rng.chance(rates.omitField)) {
        count('omitField');
        delete item[rng.chance(0.5) && 'confidence' in item ? 'confidence' : 'episodes'];
      }
    }
    const answer = {
      ...(fresh.length > 0 && { new: fresh }),
      ...(reinforce.length > 0 && { reinforce }),
      ...(update.length > 0 && { update }),
      importance: episodes.filter((e) => e.user).map((e) => ({ episode: e.n, score: recognize(e.text).length > 0 ? 0.6 : 0.1 })),
      ...(entities.length > 0 && { entities }),
      ...insights(prompt, memories, episodes),
    };
    const typed = [...fresh, ...update].find((item) => 'confidence' in item) ?? fresh[0];
    if (!constrained && typed && rng.chance(rates.wrongType)) {
      count('wrongType');
      typed.confidence = 'high';
    }
    const text = JSON.stringify(answer);
    if (rng.chance(rates.cutOff)) {
      count('cutOff');
      return { kind: 'text', text: text.slice(0, Math.floor(text.length / 2)), stop: 'max_tokens' };
    }
    return { kind: 'text', text };
  }

  /**
   * Reflection rides on the consolidation call when due (the prompt ends with its request). Like
   * the empty answers of the separate reflection call before it, the model finds no pattern worth
   * an insight, so the memory population stays comparable; at the wrong-id rate it cites a
   * memory's M-id as an insight's evidence, which the planner must refuse.
   */
  function insights(prompt: string, memories: readonly ShownMemory[], episodes: readonly ShownEpisode[]): { insights?: unknown[] } {
    if (!prompt.includes('## Reflection')) return {};
    const user = episodes.find((e) => e.user);
    if (!user || memories.length === 0 || !rng.chance(rates.wrongId)) return { insights: [] };
    count('insightCitesMemory');
    return { insights: [{ content: 'The user cares a lot about the people around them', confidence: 0.5, episodes: [user.n, rng.pick(memories).n] }] };
  }

  /** The one-sentence memory of an ended conversation: its first fact, or a line about nothing. */
  function endMemory(prompt: string): string {
    const said = prompt
      .split('\n')
      .filter((l) => /^\S*\s*person/.test(l) || l.includes(' person'))
      .map((l) => l.slice(l.indexOf(': ') + 2));
    const fact = said.flatMap((t) => recognize(t))[0];
    if (fact) return JSON.stringify({ content: phrase(fact.kind, fact.value) });
    if (rng.chance(0.5)) return JSON.stringify({ content: '' });
    count('filler');
    return JSON.stringify({ content: 'The user chatted about their day.' });
  }

  function flushFacts(prompt: string): string {
    const turns = [...prompt.matchAll(/^\[(\d+)\] person[^:]*: (.*)$/gm)];
    const facts = turns.flatMap((m) =>
      recognize(m[2]!).map((f) => ({ category: f.kind.category, content: phrase(f.kind, f.value), turns: [Number(m[1])], confidence: 0.8 })),
    );
    return JSON.stringify({ facts });
  }

  const responder: LlmResponder = (seen) => {
    const purpose = purposeOf(seen);
    const body = JSON.stringify(seen.body);
    const repair = seen.messages.at(-2)?.role === 'assistant' && /Reply again with only the corrected JSON/.test(seen.messages.at(-1)?.text ?? '');
    calls.push({ purpose, tokens: Math.ceil(body.length / 4), repair });
    if (purpose === 'reply' && captured.capturing) captured.replies.push(body);
    const prompt = seen.messages.at(-1)?.text ?? '';
    rng = createRng(fnv1a(`${params.seed}:${purpose}:${prompt}`));
    switch (purpose) {
      case 'consolidation':
        return consolidate(prompt, seen.schema !== undefined);
      case 'conversation-end':
      case 'capped':
        return { kind: 'text', text: endMemory(prompt) };
      case 'flush':
        return { kind: 'text', text: flushFacts(prompt) };
      case 'summary':
        return { kind: 'text', text: 'The person chatted about their day and mentioned a few things about their life.' };
      case 'entities':
        return { kind: 'text', text: '{"entities": []}' };
      case 'reply':
        return { kind: 'text', text: rng.pick(REPLIES) };
      default:
        return { kind: 'text', text: '{}' };
    }
  };
  return { responder, calls, mistakes, captured };
}
