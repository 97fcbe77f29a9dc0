/**
 * The soul as a document (seed 000 step 4, seed 004 user profile): {@link renderSoul} turns the
 * believed memories and the person and pet profiles of a scope into the Markdown the agent and
 * the owner read, plus the same content as structured data (`Profile.data`). Pure and
 * deterministic, with no model call and no database: a model could invent a trait or keep one
 * that was forgotten, and the soul must never say anything the memory table does not.
 *
 * It is bounded by SOUL_MAX_TOKENS, since it goes into every reply prompt: the people first, then
 * the best-ranked memories ({@link soulRank}) while they fit ({@link keptWithinBudget}).
 * Storing it, and reading it back, is `soul.ts`.
 */
import { formatLocalMinute } from '../digests/digest';
import { estimateTokens } from '../../shared/tokens';
import { isKnowledge } from '../memories/categories';
import { relationshipOf, type RelationshipState } from './relationship';

/** Seed 000: only memories believed more likely than not make it into the soul. */
export const SOUL_MIN_CONFIDENCE = 0.5;
/** A section lists at most this many memories (the most confident); the rest are counted. */
export const SOUL_MAX_LINES_PER_SECTION = 40;
/** Person and pet profiles shown, by favorability. */
export const SOUL_MAX_ENTITIES = 30;
/**
 * Default size of the soul in estimated tokens (`estimateTokens`: the larger of chars/4 and
 * words*0.75), the SOUL_MAX_TOKENS setting. The soul is in every reply prompt: unbounded, 150
 * memories made it ~5,000 tokens, more than half of an 8k llama3.2 window.
 */
export const DEFAULT_SOUL_MAX_TOKENS = 1_500;
/** People and pets take at most this share of the soul's budget; memories the rest. */
const ENTITY_SHARE = 1 / 3;
/** Recency half-life of the soul's ranking: a memory last confirmed 90 days ago counts 0.75. */
const SOUL_RECENCY_HALF_LIFE_DAYS = 90;
/** Confirmations past the first that still add weight (a fact confirmed 20 times is not 20 times truer). */
const MAX_COUNTED_REINFORCEMENTS = 10;
const DAY_MS = 86_400_000;

/** The fields of a memory the soul reads. */
export interface SoulMemory {
  readonly id: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
  readonly importance: number;
  readonly active: boolean;
  readonly validFrom: Date;
  readonly validTo: Date | null;
  /** When evidence last confirmed it (its creation when never); absent: `validFrom`. */
  readonly lastReinforcedAt?: Date;
  /** Times it was confirmed (1 when only learned once); absent: 1. */
  readonly reinforcementCount?: number;
}

/** The fields of an entity profile the soul reads. */
export interface SoulEntity {
  readonly name: string;
  readonly kind: string;
  readonly favorability: number;
  readonly attributes: unknown;
  /** Recent observations about them (the owner's words "the user's husband" make them family). */
  readonly observations?: ReadonlyArray<{ readonly content: string }>;
}

export interface SoulSource {
  /** How the owner is called in the title (the scope title or key). */
  readonly name: string;
  /** The scope's IANA time zone (or the service default); null when unknown. */
  readonly timeZone: string | null;
  readonly memories: readonly SoulMemory[];
  readonly entities: readonly SoulEntity[];
  /** Also the "now" the ranking's recency is measured from. */
  readonly updatedAt: Date;
  /** Size of the whole document in estimated tokens (default {@link DEFAULT_SOUL_MAX_TOKENS}). */
  readonly maxTokens?: number;
}

export interface SoulItem {
  readonly id: string;
  readonly category: string;
  readonly content: string;
  readonly confidence: number;
}

export interface SoulPerson {
  readonly name: string;
  readonly kind: string;
  readonly state: RelationshipState;
  readonly favorability: number;
  readonly attributes: Record<string, string>;
}

/** The structured profile stored in `Profile.data` (seed 004's UserProfile). */
export interface SoulData {
  readonly preferences: SoulItem[];
  readonly schedule: { timeZone: string | null; items: SoulItem[] };
  readonly relationships: Array<SoulItem | SoulPerson>;
  readonly interests: SoulItem[];
  readonly goals: SoulItem[];
  readonly style: SoulItem[];
  readonly facts: SoulItem[];
}

export interface RenderedSoul {
  readonly soul: string;
  readonly data: SoulData;
  /** Memories the text was built from (after the per-section cap and the token budget). */
  readonly memoryCount: number;
  /** The ids of those memories: a reply prompt does not list them again among the retrieved ones. */
  readonly memoryIds: string[];
}

export type SectionKey = 'preferences' | 'schedule' | 'relationships' | 'interests' | 'goals' | 'style' | 'facts';

const SECTIONS: ReadonlyArray<{ key: SectionKey; title: string; categories: readonly string[] }> = [
  { key: 'preferences', title: 'Preferences', categories: ['preference'] },
  { key: 'schedule', title: 'Schedule and routines', categories: ['routine', 'schedule', 'pattern'] },
  { key: 'relationships', title: 'Relationships', categories: ['relationship'] },
  { key: 'interests', title: 'Interests and skills', categories: ['interest', 'skill'] },
  { key: 'goals', title: 'Goals and projects', categories: ['goal', 'project'] },
  { key: 'style', title: 'Communication style', categories: ['style', 'emotional'] },
  { key: 'facts', title: 'Facts', categories: [] },
];

const NOTHING_YET = 'Nothing learned yet: this fills in once conversations have been consolidated into memories.';
/** The "last updated" line; it is left out when deciding whether the soul changed. */
const UPDATED_LINE = /^_Last updated [^\n]*_$/m;

function sectionOf(category: string): SectionKey {
  return SECTIONS.find((s) => s.categories.includes(category))?.key ?? 'facts';
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function byConfidence(a: SoulMemory, b: SoulMemory): number {
  return (
    b.confidence - a.confidence || b.importance - a.importance || b.validFrom.getTime() - a.validFrom.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

/**
 * Which memories the soul keeps when they do not all fit its budget:
 *
 *   rank = confidence * (0.5 + 0.5 * 0.5^(days since last confirmed / 90))
 *                     * (1 + 0.1 * min(confirmations - 1, 10))
 *
 * Confidence leads (a belief held at 0.95 beats one at 0.6 of any age); recency can at most halve
 * it, so an old certain fact stays while a stale guess goes first; each confirmation adds 10 %,
 * up to double. Ties: importance, then newer, then id (deterministic).
 */
export function soulRank(m: SoulMemory, now: Date): number {
  const confirmedAt = (m.lastReinforcedAt ?? m.validFrom).getTime();
  const ageDays = Math.max(0, (now.getTime() - confirmedAt) / DAY_MS);
  const recency = 0.5 + 0.5 * 0.5 ** (ageDays / SOUL_RECENCY_HALF_LIFE_DAYS);
  const reinforcement = 1 + 0.1 * Math.min(Math.max(0, (m.reinforcementCount ?? 1) - 1), MAX_COUNTED_REINFORCEMENTS);
  return m.confidence * recency * reinforcement;
}

function lineTokens(line: string): number {
  return estimateTokens(line) + 1;
}

function attributesOf(value: unknown): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  const out: Record<string, string> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v === null || v === undefined || v === '') continue;
    out[oneLine(key)] = oneLine(typeof v === 'string' ? v : JSON.stringify(v));
  }
  return out;
}

/** When the soul was written, in its scope's zone (TZ when the scope names none), zone named. */
function localMinute(date: Date, timeZone: string | null): string {
  return `${formatLocalMinute(date, timeZone)} ${timeZone ?? 'UTC'}`;
}

/**
 * Renders the soul from its source. Pure and deterministic (the same source gives the same text),
 * and it re-checks the belief filter itself, so no caller can slip a faded memory in.
 */
export function renderSoul(source: SoulSource): RenderedSoul {
  const believed = source.memories.filter((m) => m.active && m.validTo === null && m.confidence > SOUL_MIN_CONFIDENCE && isKnowledge(m.category));
  const grouped = new Map<SectionKey, SoulMemory[]>(SECTIONS.map((s) => [s.key, []]));
  for (const m of believed) grouped.get(sectionOf(m.category))!.push(m);

  const people: SoulPerson[] = source.entities
    .filter((e) => e.kind === 'person' || e.kind === 'pet')
    .map((e) => ({
      name: oneLine(e.name),
      kind: e.kind,
      state: relationOf(e),
      favorability: Math.round(e.favorability * 100) / 100,
      attributes: attributesOf(e.attributes),
    }))
    .sort((a, b) => b.favorability - a.favorability || a.name.localeCompare(b.name))
    .slice(0, SOUL_MAX_ENTITIES);

  const budget = source.maxTokens ?? DEFAULT_SOUL_MAX_TOKENS;
  const kept = keptWithinBudget(source, grouped, people, budget);
  const data: Record<SectionKey, SoulItem[]> = { preferences: [], schedule: [], relationships: [], interests: [], goals: [], style: [], facts: [] };
  const body: string[] = [];
  let memoryCount = 0;
  const memoryIds: string[] = [];
  for (const section of SECTIONS) {
    const all = grouped.get(section.key)!.sort(byConfidence);
    const shown = all.filter((m) => kept.memories.has(m.id));
    memoryCount += shown.length;
    memoryIds.push(...shown.map((m) => m.id));
    data[section.key] = shown.map((m) => ({ id: m.id, category: m.category, content: oneLine(m.content), confidence: Math.round(m.confidence * 100) / 100 }));
    const lines: string[] = [];
    if (section.key === 'schedule' && source.timeZone) lines.push(`- Time zone: ${source.timeZone}`);
    lines.push(...data[section.key].map((item) => `- ${item.content} (${item.confidence.toFixed(2)})`));
    if (all.length > shown.length) lines.push(`- … and ${all.length - shown.length} more`);
    if (section.key === 'relationships') {
      for (const p of people.slice(0, kept.people)) {
        lines.push(personLine(p));
      }
    }
    if (lines.length > 0) body.push(`## ${section.title}`, '', ...lines, '');
  }

  const header = [
    `# Soul of ${oneLine(source.name)}`,
    '',
    `_Last updated ${localMinute(source.updatedAt, source.timeZone)} from ${memoryCount} ${memoryCount === 1 ? 'memory' : 'memories'}._`,
    '',
  ];
  const soul = [...header, ...(body.length > 0 ? body : [NOTHING_YET, ''])].join('\n');
  return {
    soul,
    memoryCount,
    memoryIds,
    data: {
      preferences: data.preferences,
      schedule: { timeZone: source.timeZone, items: data.schedule },
      relationships: [...data.relationships, ...people.slice(0, kept.people)],
      interests: data.interests,
      goals: data.goals,
      style: data.style,
      facts: data.facts,
    },
  };
}

/** The attribute holding an entity's other names, comma-separated (written by consolidation's entity merge). */
const ALIASES_KEY = 'aliases';
/** Observations read per person for the family rule: the newest say how the owner names them now. */
export const SOUL_OBSERVATIONS_PER_PERSON = 20;

/** A person's relationship: family by the relation or aliases they are known by, or by the owner's words about them. */
function relationOf(e: SoulEntity): RelationshipState {
  const attributes = attributesOf(e.attributes);
  const relations = [attributes.relation ?? '', ...(attributes[ALIASES_KEY] ?? '').split(',')];
  return relationshipOf(
    e.favorability,
    relations,
    (e.observations ?? []).map((o) => o.content),
  );
}

function personLine(p: SoulPerson): string {
  const attributes = Object.entries(p.attributes)
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
  return `- ${p.name} (${p.kind}, ${p.state}, ${p.favorability.toFixed(2)})${attributes ? `: ${attributes}` : ''}`;
}

/**
 * What fits the budget: the people first (by favorability, within {@link ENTITY_SHARE} of it),
 * then memories by {@link soulRank} while the next one fits (at most
 * {@link SOUL_MAX_LINES_PER_SECTION} per section). Costs are summed line by line with room held
 * for the header, the headings and the "… and N more" lines, so the rendered soul stays within
 * the budget without rendering it again for each memory.
 */
export function keptWithinBudget(
  source: SoulSource,
  grouped: ReadonlyMap<SectionKey, SoulMemory[]>,
  people: readonly SoulPerson[],
  budget: number,
): { memories: Set<string>; people: number } {
  const header = `# Soul of ${oneLine(source.name)}\n\n_Last updated 0000-00-00 00:00 ${source.timeZone ?? 'UTC'} from 0000 memories._\n`;
  let used = estimateTokens(header) + 2;
  if (source.timeZone) used += lineTokens(`- Time zone: ${source.timeZone}`);
  // Each section that shows something costs its heading and, when cut, a "… and N more" line.
  const sectionCost = (title: string) => lineTokens(`## ${title}`) + 1 + lineTokens('- … and 000 more');
  const opened = new Set<SectionKey>();
  const open = (key: SectionKey): number => (opened.has(key) ? 0 : sectionCost(SECTIONS.find((s) => s.key === key)!.title));

  let peopleKept = 0;
  const peopleBudget = Math.floor(budget * ENTITY_SHARE);
  let peopleUsed = 0;
  for (const p of people) {
    const cost = lineTokens(personLine(p)) + (peopleKept === 0 ? open('relationships') : 0);
    if (peopleUsed + cost > peopleBudget || used + cost > budget) break;
    if (peopleKept === 0) opened.add('relationships');
    peopleUsed += cost;
    used += cost;
    peopleKept++;
  }

  const now = source.updatedAt;
  const ranked = [...grouped.entries()]
    .flatMap(([key, list]) =>
      [...list]
        .sort(byConfidence)
        .slice(0, SOUL_MAX_LINES_PER_SECTION)
        .map((m) => ({ key, m, rank: soulRank(m, now) })),
    )
    .sort((a, b) => b.rank - a.rank || byConfidence(a.m, b.m));
  const memories = new Set<string>();
  for (const { key, m } of ranked) {
    const cost = lineTokens(`- ${oneLine(m.content)} (${m.confidence.toFixed(2)})`) + open(key);
    if (used + cost > budget) break;
    opened.add(key);
    used += cost;
    memories.add(m.id);
  }
  return { memories, people: peopleKept };
}

/** The soul without its "last updated" line: two souls with the same body say the same thing. */
export function bodyOf(soul: string): string {
  return soul.replace(UPDATED_LINE, '');
}

/** The soul of a scope nothing has been learned about yet. */
export function emptySoul(name: string): string {
  return [`# Soul of ${oneLine(name)}`, '', NOTHING_YET, ''].join('\n');
}
