/**
 * The soul (seed 000 step 4, seed 004 user profile): what the agent believes about its owner, as
 * a Markdown document for people and the model, plus the same content as structured data.
 *
 * It is rendered deterministically from the scope's active, current memories above 0.5
 * confidence and its person and pet entity profiles, with no model call: a model could invent a
 * trait or keep one that was forgotten, and the soul must never say anything the memory table
 * does not (forgetting regenerates it). It is bounded by SOUL_MAX_TOKENS, since it goes into
 * every reply prompt: the best-ranked memories ({@link soulRank}) are kept. The version only moves when the text changes, so the
 * audit trail and anyone caching the soul see real changes only.
 */
import { formatLocalMinute } from '../digests/digest';
import { NotFoundError } from '../../shared/errors';
import { estimateTokens } from '../../shared/tokens';
import type { Prisma, PrismaClient } from '../../storage/prisma';
import { isKnowledge, KNOWLEDGE_ONLY } from '../memories/categories';
import { relationshipState, type RelationshipState } from './relationship';

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

export interface SoulResult {
  readonly soul: string;
  /** 0 when the scope has no profile yet and nothing to put in one. */
  readonly version: number;
  readonly changed: boolean;
}

type SectionKey = 'preferences' | 'schedule' | 'relationships' | 'interests' | 'goals' | 'style' | 'facts';

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
  return b.confidence - a.confidence || b.importance - a.importance || b.validFrom.getTime() - a.validFrom.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
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
    .map((e) => ({ name: oneLine(e.name), kind: e.kind, state: relationshipState(e.favorability), favorability: Math.round(e.favorability * 100) / 100, attributes: attributesOf(e.attributes) }))
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

  const header = [`# Soul of ${oneLine(source.name)}`, '', `_Last updated ${localMinute(source.updatedAt, source.timeZone)} from ${memoryCount} ${memoryCount === 1 ? 'memory' : 'memories'}._`, ''];
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

function personLine(p: SoulPerson): string {
  const attributes = Object.entries(p.attributes).map(([k, v]) => `${k}: ${v}`).join('; ');
  return `- ${p.name} (${p.kind}, ${p.state}, ${p.favorability.toFixed(2)})${attributes ? `: ${attributes}` : ''}`;
}

/**
 * What fits the budget: the people first (by favorability, within {@link ENTITY_SHARE} of it),
 * then memories by {@link soulRank} while the next one fits (at most
 * {@link SOUL_MAX_LINES_PER_SECTION} per section). Costs are summed line by line with room held
 * for the header, the headings and the "… and N more" lines, so the rendered soul stays within
 * the budget without rendering it again for each memory.
 */
function keptWithinBudget(
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
    .flatMap(([key, list]) => [...list].sort(byConfidence).slice(0, SOUL_MAX_LINES_PER_SECTION).map((m) => ({ key, m, rank: soulRank(m, now) })))
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
function bodyOf(soul: string): string {
  return soul.replace(UPDATED_LINE, '');
}

/** JSON with sorted keys (PostgreSQL's jsonb does not keep key order). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** Where the soul is read and stored: the client or an open transaction. */
type SoulStore = Pick<Prisma.TransactionClient, 'scope' | 'memory' | 'entity' | 'profile' | 'auditEvent'>;

/**
 * Rebuilds the scope's soul from what is believed now and stores it. The version moves (and an
 * `AuditEvent` 'soul' records the new version and memory count, never the text) only when the
 * text changed; a scope with no profile and nothing to say gets no row.
 */
export async function regenerateSoul(prisma: PrismaClient, scopeId: string, options: SoulOptions): Promise<SoulResult> {
  return prisma.$transaction((tx) => regenerateSoulIn(tx, scopeId, options));
}

export interface SoulOptions {
  readonly now: Date;
  readonly runId?: string;
  readonly defaultTimeZone?: string;
  /** SOUL_MAX_TOKENS (default {@link DEFAULT_SOUL_MAX_TOKENS}). */
  readonly maxTokens?: number;
}

/**
 * {@link regenerateSoul} inside a transaction the caller holds. Forgetting rebuilds the soul in
 * its own transaction this way, so no moment exists (a crash included) at which a memory is gone
 * and the soul still quotes it. Deterministic: the same rows and `now` give the same text.
 */
export async function regenerateSoulIn(tx: SoulStore, scopeId: string, options: SoulOptions): Promise<SoulResult> {
  const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { key: true, title: true, timezone: true } });
  if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
  const memories = await tx.memory.findMany({
    where: { scopeId, active: true, validTo: null, confidence: { gt: SOUL_MIN_CONFIDENCE }, ...KNOWLEDGE_ONLY },
    select: { id: true, category: true, content: true, confidence: true, importance: true, active: true, validFrom: true, validTo: true, lastReinforcedAt: true, reinforcementCount: true },
  });
  const entities = await tx.entity.findMany({
    where: { scopeId, kind: { in: ['person', 'pet'] } },
    select: { name: true, kind: true, favorability: true, attributes: true },
    orderBy: [{ favorability: 'desc' }, { name: 'asc' }],
    take: SOUL_MAX_ENTITIES,
  });
  const rendered = renderSoul({ name: scope.title ?? scope.key, timeZone: scope.timezone ?? options.defaultTimeZone ?? null, memories, entities, updatedAt: options.now, maxTokens: options.maxTokens });
  const data = rendered.data as unknown as Prisma.InputJsonObject;

  const existing = await tx.profile.findUnique({ where: { scopeId } });
  if (!existing && rendered.memoryCount === 0 && entities.length === 0) return { soul: rendered.soul, version: 0, changed: false };
  if (existing && bodyOf(existing.soul) === bodyOf(rendered.soul)) {
    if (canonical(existing.data) !== canonical(rendered.data)) await tx.profile.update({ where: { scopeId }, data: { data } });
    return { soul: existing.soul, version: existing.version, changed: false };
  }
  const version = (existing?.version ?? 0) + 1;
  await tx.profile.upsert({ where: { scopeId }, create: { scopeId, soul: rendered.soul, data, version }, update: { soul: rendered.soul, data, version } });
  await tx.auditEvent.create({
    data: { scopeId, runId: options.runId ?? null, action: 'soul', subjectType: 'profile', subjectId: scopeId, after: { version, memories: rendered.memoryCount }, createdAt: options.now },
  });
  return { soul: rendered.soul, version, changed: true };
}

/** The stored soul, or a short document saying nothing has been learned yet. */
export async function soulMarkdown(prisma: PrismaClient, scopeId: string): Promise<string> {
  const profile = await prisma.profile.findUnique({ where: { scopeId }, select: { soul: true } });
  if (profile) return profile.soul;
  const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { key: true, title: true } });
  if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
  return [`# Soul of ${oneLine(scope.title ?? scope.key)}`, '', NOTHING_YET, ''].join('\n');
}

/** The ids of the memories a stored soul's data lists (people and pets have none). */
export function soulMemoryIds(data: unknown): string[] {
  if (!data || typeof data !== 'object') return [];
  const d = data as Partial<Record<SectionKey, unknown>>;
  const lists = [d.preferences, (d.schedule as { items?: unknown } | undefined)?.items, d.relationships, d.interests, d.goals, d.style, d.facts];
  const ids: string[] = [];
  for (const list of lists) {
    if (!Array.isArray(list)) continue;
    for (const item of list) if (item && typeof item === 'object' && typeof (item as { id?: unknown }).id === 'string') ids.push((item as { id: string }).id);
  }
  return ids;
}

/** The soul as a reply prompt shows it: its text and the memories it already states. */
export interface SoulView {
  readonly markdown: string;
  readonly memoryIds: readonly string[];
}

/** Reads a scope's soul for a prompt (the agent's view: no database handle). */
export interface SoulReader {
  /** The stored soul, or a short document saying nothing has been learned yet. */
  markdown(scopeId: string): Promise<string>;
  /** The stored soul with the ids of the memories it lists. */
  read(scopeId: string): Promise<SoulView>;
}

export function createSoulReader(prisma: PrismaClient): SoulReader {
  return {
    markdown: (scopeId) => soulMarkdown(prisma, scopeId),
    async read(scopeId) {
      const profile = await prisma.profile.findUnique({ where: { scopeId }, select: { soul: true, data: true } });
      if (profile) return { markdown: profile.soul, memoryIds: soulMemoryIds(profile.data) };
      return { markdown: await soulMarkdown(prisma, scopeId), memoryIds: [] };
    },
  };
}
