/**
 * The simulated people of the memory hygiene benchmark and what is true of them: each person has
 * a small ground truth (a job, a city, a partner, a pet, tastes, hobbies, a few dated events),
 * some of it changing on a given day (a new job, a move). Every kind of fact comes with the ways
 * a person says it (first person, several wordings) and the ways a model writes it down (third
 * person, several wordings), so restatements and paraphrased memories arise as they do in use.
 *
 * Everything is drawn from a seeded generator: the same seed gives the same people.
 */

/** A small seeded generator (mulberry32): deterministic, fast, good enough for a simulation. */
export interface Rng {
  next(): number;
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: readonly T[]): T[];
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0 || 1;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const rng: Rng = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    shuffle: (items) => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    },
  };
  return rng;
}

/** A kind of fact: its values and how it is said and remembered (`{v}` is the value). */
export interface FactKind {
  readonly key: string;
  readonly category: 'fact' | 'preference' | 'relationship' | 'interest' | 'skill' | 'schedule';
  readonly values: readonly string[];
  /** How the person says it, first person. */
  readonly said: readonly string[];
  /** How the person announces that it changed (kinds that can change). */
  readonly changed?: readonly string[];
  /** How a model writes it down, third person. */
  readonly remembered: readonly string[];
}

export const FACT_KINDS: readonly FactKind[] = [
  {
    key: 'job',
    category: 'fact',
    values: ['a nurse', 'a software engineer', 'a teacher', 'an accountant', 'a chef', 'an architect', 'a pharmacist', 'an electrician', 'a journalist'],
    said: ['I work as {v}.', "Work-wise, I'm {v}.", "I've been {v} for years now.", 'Being {v} is tiring this week.'],
    changed: ['Big news: I just started a new job as {v}!', "I left my old job, I'm {v} now."],
    remembered: ['The user works as {v}.', 'The user is {v} by profession.', 'The user is employed as {v}.', 'The user has a job as {v}.'],
  },
  {
    key: 'city',
    category: 'fact',
    values: ['Lisbon', 'Leeds', 'Austin', 'Lyon', 'Porto', 'Denver', 'Ghent', 'Bristol', 'Turin', 'Halifax'],
    said: ['I live in {v}.', "Here in {v} it's been windy all week.", "I've lived in {v} for a while."],
    changed: ['We finally moved to {v}!', "I'm living in {v} now, the move is done."],
    remembered: ['The user lives in {v}.', "The user's home is in {v}.", 'The user is based in {v}.', 'The user resides in {v}.'],
  },
  {
    key: 'partner',
    category: 'relationship',
    values: ['Sam', 'Priya', 'Jonas', 'Mei', 'Carlos', 'Aisha', 'Tom', 'Elena', 'Noor', 'Felix'],
    said: ['My partner {v} says hi.', 'My partner {v} cooked tonight.', "I'm going out with my partner {v} tonight."],
    remembered: ["The user's partner is named {v}.", 'The user has a partner called {v}.', "{v} is the user's partner."],
  },
  {
    key: 'dog',
    category: 'relationship',
    values: ['Biscuit', 'Luna', 'Pepper', 'Milo', 'Olive', 'Rufus', 'Nala', 'Ziggy'],
    said: ['My dog {v} chewed my shoe.', 'Took my dog {v} to the park.', 'I have a dog named {v}.'],
    remembered: ['The user has a dog named {v}.', "The user's dog is called {v}.", 'The user owns a dog, {v}.'],
  },
  {
    key: 'food',
    category: 'preference',
    values: ['sushi', 'lasagna', 'ramen', 'tacos', 'dumplings', 'paella', 'curry', 'pho'],
    said: ['My favourite food is {v}.', 'I could eat {v} every day.', 'Nothing beats {v} for dinner.'],
    remembered: ["The user's favorite food is {v}.", 'The user loves {v}.', 'The user enjoys eating {v} most.'],
  },
  {
    key: 'hobby',
    category: 'interest',
    values: ['climbing', 'chess', 'pottery', 'running', 'gardening', 'painting', 'cycling', 'knitting', 'baking', 'photography'],
    said: ['My hobby is {v}.', "I'm really into {v} lately.", 'Did some {v} this morning.'],
    remembered: ["The user's hobby is {v}.", 'The user enjoys {v}.', 'The user is into {v}.'],
  },
  {
    key: 'instrument',
    category: 'skill',
    values: ['guitar', 'piano', 'violin', 'drums', 'cello', 'ukulele'],
    said: ['I play the {v}.', 'Practiced the {v} for an hour.', "I've been learning the {v}."],
    remembered: ['The user plays the {v}.', 'The user is learning the {v}.', 'The user practices the {v}.'],
  },
  {
    key: 'drink',
    category: 'preference',
    values: ['black coffee', 'green tea', 'an oat latte', 'espresso', 'chai'],
    said: ['I always start my day with {v}.', 'My go-to drink is {v}.'],
    remembered: ['The user prefers {v}.', "The user's usual drink is {v}.", 'The user starts the day with {v}.'],
  },
  {
    key: 'sister',
    category: 'relationship',
    values: ['Rosa', 'Hannah', 'Lea', 'Ines', 'Maya'],
    said: ['My sister {v} is visiting.', 'Called my sister {v} today.'],
    remembered: ['The user has a sister named {v}.', "The user's sister is {v}."],
  },
  {
    key: 'allergy',
    category: 'fact',
    values: ['peanuts', 'shellfish', 'cats', 'pollen', 'gluten'],
    said: ["I'm allergic to {v}.", 'I have to avoid {v}, allergies.'],
    remembered: ['The user is allergic to {v}.', 'The user has an allergy to {v}.'],
  },
  {
    key: 'team',
    category: 'interest',
    values: ['Arsenal', 'the Celtics', 'Benfica', 'the Yankees', 'Ajax'],
    said: ['I support {v}.', 'Watching {v} tonight, fingers crossed.'],
    remembered: ['The user supports {v}.', 'The user is a fan of {v}.'],
  },
  {
    key: 'language',
    category: 'interest',
    values: ['Japanese', 'Spanish', 'German', 'Italian', 'Korean'],
    said: ["I'm learning {v}.", 'My {v} lessons are going well.'],
    remembered: ['The user is learning {v}.', 'The user studies {v}.'],
  },
  {
    key: 'car',
    category: 'fact',
    values: ['a red Honda', 'an old Volvo', 'a blue Fiat', 'an electric Kia'],
    said: ['I drive {v}.', 'My car is {v}.'],
    remembered: ['The user drives {v}.', "The user's car is {v}."],
  },
  {
    key: 'birthday',
    category: 'fact',
    values: ['January', 'March', 'May', 'July', 'September', 'November'],
    said: ['My birthday is in {v}.', 'I was born in {v}.'],
    remembered: ["The user's birthday is in {v}.", 'The user was born in {v}.'],
  },
];

/** Dated events: said before they happen; the value carries its date. */
export const EVENT_KIND: FactKind = {
  key: 'event',
  category: 'schedule',
  values: ['a dentist appointment', 'a job interview', 'a flight to Rome', 'a concert', 'a half marathon', 'a wedding to attend'],
  said: ['I have {v}.', "Don't let me forget, {v}."],
  remembered: ['The user has {v}.', 'The user is scheduled for {v}.'],
};

export const ALL_KINDS: readonly FactKind[] = [...FACT_KINDS, EVENT_KIND];

/** One fact of a person: its value, and when it changes (the new value from `changeDay` on). */
export interface Fact {
  readonly kind: FactKind;
  readonly value: string;
  readonly change?: { readonly day: number; readonly value: string };
  /** Events: the day it happens (said only before it). */
  readonly eventDay?: number;
}

export interface Person {
  readonly id: string;
  readonly name: string;
  readonly facts: readonly Fact[];
}

const NAMES = [
  'Ada',
  'Ben',
  'Chloe',
  'Dev',
  'Eva',
  'Finn',
  'Gia',
  'Hugo',
  'Iris',
  'Jon',
  'Kira',
  'Liam',
  'Mona',
  'Nico',
  'Omar',
  'Pia',
  'Quinn',
  'Rui',
  'Sara',
  'Theo',
];

function otherValue(rng: Rng, kind: FactKind, not: string): string {
  return rng.pick(kind.values.filter((v) => v !== not));
}

export function dayLabel(start: Date, day: number): string {
  return new Date(start.getTime() + day * 86_400_000).toLocaleDateString('en-GB', { day: 'numeric', month: 'long', timeZone: 'UTC' });
}

/**
 * `count` people over `days` days from `start`: everyone has a job and a city (the job changes
 * for about 60 %, the city for about 40 %, somewhere in the middle third), 10-12 other facts and
 * 3-5 events, so 15-19 facts each.
 */
export function createPeople(params: { count: number; days: number; seed: number; start: Date }): Person[] {
  const rng = createRng(params.seed);
  const people: Person[] = [];
  for (let i = 0; i < params.count; i++) {
    const facts: Fact[] = [];
    const changeDay = () => rng.int(Math.floor(params.days / 3), Math.floor((params.days * 2) / 3));
    for (const kind of FACT_KINDS.slice(0, 2)) {
      const value = rng.pick(kind.values);
      const changes = rng.chance(kind.key === 'job' ? 0.6 : 0.4);
      facts.push({ kind, value, ...(changes && { change: { day: changeDay(), value: otherValue(rng, kind, value) } }) });
    }
    for (const kind of rng.shuffle(FACT_KINDS.slice(2)).slice(0, rng.int(10, 12))) facts.push({ kind, value: rng.pick(kind.values) });
    for (const thing of rng.shuffle(EVENT_KIND.values).slice(0, rng.int(3, 5))) {
      const eventDay = rng.int(7, params.days - 1);
      facts.push({ kind: EVENT_KIND, value: `${thing} on ${dayLabel(params.start, eventDay)}`, eventDay });
    }
    const name = NAMES[i % NAMES.length]!;
    people.push({ id: `p${String(i + 1).padStart(2, '0')}-${name.toLowerCase()}`, name, facts });
  }
  return people;
}

/** The value of a fact on a day. */
export function valueOn(fact: Fact, day: number): string {
  return fact.change && day >= fact.change.day ? fact.change.value : fact.value;
}

export function fill(template: string, value: string): string {
  return template.replace('{v}', value);
}
