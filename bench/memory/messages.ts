/**
 * What the simulated people say: a conversation every 2-4 days, 3-6 messages a minute or two
 * apart, at a daytime hour. A message is small talk, a fact said for the first time, a fact said
 * again in other words, a change announced (a new job, a move) on the first conversation after it
 * happened, or an upcoming event; some messages open with small talk before the fact.
 */
import { createRng, fill, valueOn, type Fact, type Person, type Rng } from './people';

export const SMALL_TALK: readonly string[] = [
  'Good morning!', 'How are you today?', 'Ugh, Mondays.', 'What a rainy day.', 'Thanks, that helps.', 'Haha, fair enough.',
  'Any ideas for dinner?', "I'm so tired today.", 'Can you tell me a joke?', 'What should I read next?', 'Ok.', 'Nice.',
  'Long day, finally home.', 'Just checking in.', 'That made me laugh.', 'Not much going on today.',
];

/** Shares of message kinds (the rest is small talk). */
export const MESSAGE_MIX = { newFact: 0.3, restated: 0.25, smallTalkPrefix: 0.2 } as const;

export interface SimMessage {
  readonly at: Date;
  readonly text: string;
  /** What the message says, for the report: the fact key, or null for small talk. */
  readonly says: string | null;
}

export interface Conversation {
  readonly person: Person;
  readonly day: number;
  readonly messages: readonly SimMessage[];
}

interface SpeakerState {
  readonly mentioned: Set<Fact>;
  readonly announced: Set<Fact>;
}

function sentenceFor(rng: Rng, fact: Fact, day: number, state: SpeakerState): string {
  if (fact.change && day >= fact.change.day && !state.announced.has(fact)) {
    state.announced.add(fact);
    state.mentioned.add(fact);
    return fill(rng.pick(fact.kind.changed ?? fact.kind.said), fact.change.value);
  }
  state.mentioned.add(fact);
  return fill(rng.pick(fact.kind.said), valueOn(fact, day));
}

/** Facts a person may speak of on a day: events only before they happen. */
function speakable(person: Person, day: number): Fact[] {
  return person.facts.filter((f) => f.eventDay === undefined || f.eventDay > day);
}

/** One person's conversations over `days` days, from `start` (midnight UTC of day 0). */
export function conversationsOf(person: Person, params: { days: number; start: Date; seed: number }): Conversation[] {
  const rng = createRng(params.seed);
  const state: SpeakerState = { mentioned: new Set(), announced: new Set() };
  const out: Conversation[] = [];
  for (let day = rng.int(0, 2); day < params.days; day += rng.int(2, 4)) {
    const messages: SimMessage[] = [];
    let at = params.start.getTime() + day * 86_400_000 + rng.int(8, 20) * 3_600_000 + rng.int(0, 59) * 60_000;
    const count = rng.int(3, 6);
    const pending = person.facts.filter((f) => f.change && day >= f.change.day && !state.announced.has(f));
    for (let i = 0; i < count; i++) {
      const facts = speakable(person, day);
      const fresh = facts.filter((f) => !state.mentioned.has(f));
      const known = facts.filter((f) => state.mentioned.has(f));
      const roll = rng.next();
      let fact: Fact | undefined;
      if (pending.length > 0 && i === 1) fact = pending.shift();
      else if (roll < MESSAGE_MIX.newFact && fresh.length > 0) fact = rng.pick(fresh);
      else if (roll < MESSAGE_MIX.newFact + MESSAGE_MIX.restated && known.length > 0) fact = rng.pick(known);
      let text = fact ? sentenceFor(rng, fact, day, state) : rng.pick(SMALL_TALK);
      if (fact && rng.chance(MESSAGE_MIX.smallTalkPrefix)) text = `${rng.pick(SMALL_TALK)} ${text}`;
      messages.push({ at: new Date(at), text, says: fact?.kind.key ?? null });
      at += rng.int(1, 3) * 60_000;
    }
    out.push({ person, day, messages });
  }
  return out;
}

/** Every conversation of every person, in time order, with the volume for the report. */
export function schedule(people: readonly Person[], params: { days: number; start: Date; seed: number }): Conversation[] {
  return people
    .flatMap((p, i) => conversationsOf(p, { ...params, seed: params.seed * 1_000 + i + 1 }))
    .sort((a, b) => a.messages[0]!.at.getTime() - b.messages[0]!.at.getTime());
}
