/**
 * What the simulated people say: a conversation every 2-4 days, 3-6 messages a minute or two
 * apart, at a daytime hour. A message is small talk, a fact said for the first time, a fact said
 * again in other words, a change announced (a new job, a move) on the first conversation after it
 * happened, or an upcoming event; some messages open with small talk before the fact.
 */
import { createRng, fill, valueOn, type Fact, type Person, type Rng } from './people';

export const SMALL_TALK: readonly string[] = [
  'Good morning!',
  'How are you today?',
  'Ugh, Mondays.',
  'What a rainy day.',
  'Thanks, that helps.',
  'Haha, fair enough.',
  'Any ideas for dinner?',
  "I'm so tired today.",
  'Can you tell me a joke?',
  'What should I read next?',
  'Ok.',
  'Nice.',
  'Long day, finally home.',
  'Just checking in.',
  'That made me laugh.',
  'Not much going on today.',
];

/** Shares of message kinds (the rest is small talk). */
export const MESSAGE_MIX = { newFact: 0.3, restated: 0.25, smallTalkPrefix: 0.2 } as const;

/**
 * Every this-many-th person (the first, the fifth, ...) talks on most days (a conversation every
 * 1-2 days instead of 2-4): the people whose lag from message to memory the bench reports.
 */
export const DAILY_TALKER_EVERY = 4;

/** Share of conversations that end with a question about a fact the person said 1-20 days before. */
export const QUESTION_SHARE = 0.35;
/** How far back a question reaches, in days. */
export const QUESTION_DAYS = { min: 1, max: 20 } as const;

/** How a person asks about a fact they told (no value in the question: the reply must bring it). */
const QUESTIONS: Readonly<Record<string, string>> = {
  job: 'Remind me, what do I do for work?',
  city: 'Which city did I say I live in?',
  partner: "What's my partner's name again?",
  dog: "What's my dog called?",
  food: 'What did I say my favourite food was?',
  hobby: 'Do you remember my hobby?',
  instrument: 'Which instrument do I play?',
  drink: 'What do I usually drink in the morning?',
  sister: "What's my sister's name?",
  allergy: 'What am I allergic to again?',
  team: 'Which team do I support?',
  language: 'Which language am I learning?',
  car: 'What car do I drive?',
  birthday: 'When is my birthday?',
  event: 'What did I tell you I have coming up?',
};

export interface SimMessage {
  readonly at: Date;
  readonly text: string;
  /** What the message says, for the report: the fact key, or null for small talk (and questions). */
  readonly says: string | null;
  /** A question about what the person said 1-20 days before: the fact and the value the prompt must hold. */
  readonly asks?: { readonly key: string; readonly value: string; readonly saidDay: number };
}

export interface Conversation {
  readonly person: Person;
  readonly day: number;
  readonly messages: readonly SimMessage[];
}

interface SpeakerState {
  readonly mentioned: Set<Fact>;
  readonly announced: Set<Fact>;
  /** The day each fact was last said, and the value said. */
  readonly lastSaid: Map<Fact, { day: number; value: string }>;
}

function sentenceFor(rng: Rng, fact: Fact, day: number, state: SpeakerState): string {
  if (fact.change && day >= fact.change.day && !state.announced.has(fact)) {
    state.announced.add(fact);
    state.mentioned.add(fact);
    state.lastSaid.set(fact, { day, value: fact.change.value });
    return fill(rng.pick(fact.kind.changed ?? fact.kind.said), fact.change.value);
  }
  state.mentioned.add(fact);
  state.lastSaid.set(fact, { day, value: valueOn(fact, day) });
  return fill(rng.pick(fact.kind.said), valueOn(fact, day));
}

/** Facts a person may speak of on a day: events only before they happen. */
function speakable(person: Person, day: number): Fact[] {
  return person.facts.filter((f) => f.eventDay === undefined || f.eventDay > day);
}

/** A fact said 1-20 days before `day` whose value still holds, to ask about; undefined when none. */
function askable(rng: Rng, _person: Person, day: number, state: SpeakerState): { fact: Fact; said: { day: number; value: string } } | undefined {
  const candidates = [...state.lastSaid.entries()].filter(
    ([fact, said]) =>
      day - said.day >= QUESTION_DAYS.min &&
      day - said.day <= QUESTION_DAYS.max &&
      valueOn(fact, day) === said.value &&
      (fact.eventDay === undefined || fact.eventDay > day),
  );
  if (candidates.length === 0) return undefined;
  const [fact, said] = rng.pick(candidates);
  return { fact, said };
}

/**
 * One person's conversations over `days` days, from `start` (midnight UTC of day 0): one every
 * `gap` days (2-4 by default), some ending with a question about a fact said 1-20 days before.
 */
export function conversationsOf(person: Person, params: { days: number; start: Date; seed: number; gap?: readonly [number, number] }): Conversation[] {
  const rng = createRng(params.seed);
  const state: SpeakerState = { mentioned: new Set(), announced: new Set(), lastSaid: new Map() };
  const out: Conversation[] = [];
  const [gapMin, gapMax] = params.gap ?? [2, 4];
  for (let day = rng.int(0, 2); day < params.days; day += rng.int(gapMin, gapMax)) {
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
    const question = rng.chance(QUESTION_SHARE) ? askable(rng, person, day, state) : undefined;
    if (question) {
      const { fact, said } = question;
      messages.push({ at: new Date(at), text: QUESTIONS[fact.kind.key]!, says: null, asks: { key: fact.kind.key, value: said.value, saidDay: said.day } });
    }
    out.push({ person, day, messages });
  }
  return out;
}

/** Whether the person at `index` of the population talks on most days. */
export function isDailyTalker(index: number): boolean {
  return index % DAILY_TALKER_EVERY === 0;
}

/** Every conversation of every person, in time order, with the volume for the report. */
export function schedule(people: readonly Person[], params: { days: number; start: Date; seed: number }): Conversation[] {
  return people
    .flatMap((p, i) => conversationsOf(p, { ...params, seed: params.seed * 1_000 + i + 1, ...(isDailyTalker(i) && { gap: [1, 2] as const }) }))
    .sort((a, b) => a.messages[0]!.at.getTime() - b.messages[0]!.at.getTime());
}
