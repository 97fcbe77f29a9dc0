/**
 * The memory page tests' data: two people (Telegram users) and a JSON export of each one's
 * private scope with something for every view of the page: memories in several categories with
 * the messages they came from, a faded one, one written in markup, links, people and things,
 * nightly digests, audit events and a profile. Dated relative to a given time, so the timeline's
 * last 60 nights hold it.
 */
import type { FakeUser } from '../doubles/telegram-server';

/** The two people of the fixture, as Telegram users. */
export const ANA: FakeUser = { id: 7_001_001, first_name: 'Ana' };
export const BRUNO: FakeUser = { id: 7_001_002, first_name: 'Bruno' };

export const scopeKeyOf = (person: FakeUser): string => `telegram:private:${person.id}`;

const DAY_MS = 24 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;

/** What the fixture puts in one person's scope, for the assertions. */
export interface FixtureFacts {
  readonly scopeId: string;
  /** Current memories' texts (what the Memories view lists by default). */
  readonly active: readonly string[];
  /** The faded memory's text (listed only with "show faded"). */
  readonly faded: string;
  /** Ids by name, for the actions. */
  readonly ids: Readonly<Record<string, string>>;
  /** Nights with a digest, oldest first (YYYY-MM-DD, UTC), and the digests' texts. */
  readonly digestNights: readonly string[];
  readonly digests: readonly string[];
  readonly entityNames: readonly string[];
  readonly soul: string;
}

/** A UUIDv7-shaped id unique to a person and a number (stable across runs: the tests name rows by it). */
const idFor = (person: FakeUser, n: number): string => `0190b000-0000-7000-8${String(person.id % 1000).padStart(3, '0')}-${n.toString(16).padStart(12, '0')}`;

interface MemorySeed {
  readonly name: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  readonly message: string;
  readonly daysAgo: number;
  readonly faded?: boolean;
}

/** A memory whose text is markup: the page must show it as text, never run or render it. */
export const MARKUP_MEMORY = 'Ana\'s note reads <img src=x onerror="window.__pwned=1"> & <b>bold</b>.';

/** Ana's world; Bruno's is the same shape with his own words (`${name}` marks whose). */
function memorySeeds(name: string): MemorySeed[] {
  const own = name === 'Ana';
  return [
    {
      name: 'husband',
      category: 'relationship',
      content: own ? 'Ana is married to Jordi, who teaches music.' : 'Bruno lives with his sister Carla.',
      confidence: 0.92,
      message: own ? 'Jordi, my husband, teaches music at the conservatory.' : 'My sister Carla and I share a flat.',
      daysAgo: 9,
    },
    {
      name: 'coffee',
      category: 'preference',
      content: own ? 'Ana drinks her coffee black, no sugar.' : 'Bruno prefers green tea to coffee.',
      confidence: 0.8,
      message: own ? 'Black coffee please, never sugar.' : 'Green tea for me, coffee keeps me up.',
      daysAgo: 7,
    },
    {
      name: 'marathon',
      category: 'goal',
      content: own ? 'Ana is training for the Valencia marathon in December.' : 'Bruno wants to learn to sail this summer.',
      confidence: 0.74,
      message: own ? "I'm training for the Valencia marathon in December!" : 'This summer I want to learn to sail.',
      daysAgo: 5,
    },
    {
      name: 'dog',
      category: 'fact',
      content: own ? 'Ana has a beagle called Luna.' : 'Bruno has a cat named Pixel.',
      confidence: 0.88,
      message: own ? 'Luna, my beagle, stole my sandwich again.' : 'Pixel the cat knocked my cup over.',
      daysAgo: 3,
    },
    {
      name: 'standup',
      category: 'routine',
      content: own ? 'Ana has a team stand-up every weekday at 9:30.' : 'Bruno works late on Thursdays.',
      confidence: 0.66,
      message: own ? 'Stand-up at 9:30 every weekday, as always.' : 'Thursdays I stay late at the office.',
      daysAgo: 2,
    },
    {
      name: 'markup',
      category: 'fact',
      content: own ? MARKUP_MEMORY : 'Bruno writes <b>bold</b> in his notes.',
      confidence: 0.55,
      message: own ? 'Remember my note: <img src=x onerror="window.__pwned=1"> & <b>bold</b>' : 'I write <b>bold</b> in notes.',
      daysAgo: 4,
    },
    {
      name: 'guitar',
      category: 'interest',
      content: own ? 'Ana used to play the guitar.' : 'Bruno once collected stamps.',
      confidence: 0.3,
      message: own ? 'I played guitar as a teenager.' : 'As a kid I collected stamps.',
      daysAgo: 12,
      faded: true,
    },
  ];
}

/**
 * A JSON export (`nocturne.scope-export` v1) of `person`'s private Telegram scope, dated
 * relative to `now` so the timeline's last 60 nights hold it.
 */
export function buildExport(person: FakeUser, now: Date, options: { markup?: boolean } = {}): { document: Record<string, unknown>; facts: FixtureFacts } {
  const name = person.first_name;
  const at = (daysAgo: number, hours = 0) => new Date(now.getTime() - daysAgo * DAY_MS + hours * HOUR_MS).toISOString();
  const scopeId = idFor(person, 1);
  const seeds = memorySeeds(name).filter((seed) => options.markup !== false || seed.name !== 'markup');
  const ids: Record<string, string> = {};
  const episodes = seeds.map((seed, i) => {
    const id = idFor(person, 100 + i);
    ids[`episode:${seed.name}`] = id;
    return {
      id,
      channel: 'telegram',
      role: 'user',
      author: name,
      authorId: String(person.id),
      content: seed.message,
      summary: null,
      timestamp: at(seed.daysAgo, -3),
      conversationId: null,
      turn: null,
      externalId: `tg-${person.id}-${i}`,
      metadata: null,
      importance: 0.6,
      importanceSource: 'default',
      consolidated: true,
      consolidationAttempts: 1,
      consolidatedAt: at(seed.daysAgo),
      contentHash: `fixture-${person.id}-${i}`,
      createdAt: at(seed.daysAgo, -3),
      tags: [],
    };
  });
  const memories = seeds.map((seed, i) => {
    const id = idFor(person, 200 + i);
    ids[seed.name] = id;
    return {
      id,
      category: seed.category,
      content: seed.content,
      subjectId: String(person.id),
      subjectName: name,
      confidence: seed.confidence,
      importance: 0.6,
      active: !seed.faded,
      reinforcementCount: 1,
      lastReinforcedAt: at(seed.daysAgo),
      sourceType: 'episode',
      sourceTrust: 1,
      validFrom: at(seed.daysAgo),
      // A faded memory is inactive but still current (no later version ended it).
      validTo: null,
      supersededById: null,
      linkedAt: null,
      decaySteps: seed.faded ? 3 : 0,
      accessCount: 0,
      lastAccessedAt: null,
      createdAt: at(seed.daysAgo),
      updatedAt: seed.faded ? at(1) : at(seed.daysAgo),
      sourceEpisodeIds: [ids[`episode:${seed.name}`]!],
    };
  });
  const memoryLinks = [
    ['husband', 'guitar', 'related'],
    ['marathon', 'standup', 'related'],
    ['dog', 'marathon', 'related'],
  ].map(([from, to, kind], i) => ({
    id: idFor(person, 300 + i),
    fromId: ids[from!]!,
    toId: ids[to!]!,
    kind: kind!,
    score: 0.7,
    reason: null,
    createdAt: at(2),
  }));
  const entityRows = (
    name === 'Ana'
      ? [
          { key: 'jordi', name: 'Jordi', kind: 'person', about: 'husband', note: 'Jordi is Ana’s husband; he teaches music.', relation: 'husband' },
          { key: 'luna', name: 'Luna', kind: 'pet', about: 'dog', note: 'Luna is Ana’s beagle.' },
          { key: 'valencia marathon', name: 'Valencia marathon', kind: 'thing', about: 'marathon', note: 'A race in December Ana trains for.' },
        ]
      : [
          { key: 'carla', name: 'Carla', kind: 'person', about: 'husband', note: 'Carla is Bruno’s sister.' },
          { key: 'pixel', name: 'Pixel', kind: 'pet', about: 'dog', note: 'Pixel is Bruno’s cat.' },
        ]
  ).map((e, i) => ({
    id: idFor(person, 400 + i),
    key: e.key,
    name: e.name,
    kind: e.kind,
    // Consolidation writes the person's relation to the owner beside the summary.
    attributes: 'relation' in e ? { summary: e.note, relation: e.relation } : { summary: e.note },
    favorability: 0.6,
    interactionCount: 2,
    createdAt: at(9),
    updatedAt: at(2),
    observations: [{ id: idFor(person, 500 + i), episodeId: ids[`episode:${e.about}`]!, content: e.note, consolidated: true, createdAt: at(2) }],
  }));
  const digestDays = [9, 7, 5, 3, 2];
  const digests = digestDays.map((daysAgo, i) => {
    const seed = seeds.find((s) => s.daysAgo === daysAgo)!;
    return {
      id: idFor(person, 600 + i),
      periodStart: at(daysAgo + 1),
      periodEnd: at(daysAgo),
      content: `Last night I learned: ${seed.content}`,
      items: [{ n: 1, memoryId: ids[seed.name], text: seed.content }],
      status: 'sent',
      attempts: 1,
      sentAt: at(daysAgo),
      createdAt: at(daysAgo),
    };
  });
  const auditEvents = [
    ...seeds.map((seed, i) => ({
      id: idFor(person, 700 + i),
      runId: null,
      action: 'create',
      subjectType: 'memory',
      subjectId: ids[seed.name]!,
      before: null,
      after: { content: seed.content, category: seed.category },
      reason: 'consolidated while asleep',
      createdAt: at(seed.daysAgo),
    })),
    {
      id: idFor(person, 790),
      runId: null,
      action: 'deactivate',
      subjectType: 'memory',
      subjectId: ids.guitar!,
      before: { active: true },
      after: { active: false },
      reason: 'faded: not recalled for a long time',
      createdAt: at(1),
    },
  ];
  const soul =
    name === 'Ana'
      ? '# Ana\n\nMarried to Jordi (a music teacher). Has a beagle, Luna.\nTraining for the Valencia marathon in December.\nLikes her coffee black.'
      : '# Bruno\n\nLives with his sister Carla and a cat, Pixel.\nPrefers green tea.';
  const document = {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: scopeId,
      key: scopeKeyOf(person),
      channel: 'telegram',
      kind: 'private',
      title: name,
      ownerId: String(person.id),
      timezone: 'UTC',
      paused: false,
      settings: null,
      lastMessageAt: at(2),
      createdAt: at(14),
      updatedAt: at(1),
    },
    profile: { soul, data: null, version: 3, updatedAt: at(1) },
    conversations: [],
    episodes,
    memories,
    memoryLinks,
    entities: entityRows,
    digests,
    reminders: [],
    sleepRuns: [],
    auditEvents,
  };
  const facts: FixtureFacts = {
    scopeId,
    active: seeds.filter((s) => !s.faded).map((s) => s.content),
    faded: seeds.find((s) => s.faded)!.content,
    ids,
    digestNights: digests.map((d) => d.periodEnd.slice(0, 10)).sort(),
    digests: digests.map((d) => d.content),
    entityNames: entityRows.map((e) => e.name),
    soul,
  };
  return { document, facts };
}
