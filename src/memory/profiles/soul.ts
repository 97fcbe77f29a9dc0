/**
 * The stored soul (seed 000 step 4, seed 004 user profile): what the agent believes about its
 * owner, kept in the scope's `Profile` row and rebuilt from the scope's active, current memories
 * above 0.5 confidence (of two that contradict, only the side most likely current) and its person
 * and pet entity profiles (rendered by `soul-render.ts`;
 * forgetting regenerates it). The version only moves when the text changes, so the audit trail
 * and anyone caching the soul see real changes only. Read back for the CLI, the API and the
 * agent's prompts ({@link SoulReader}).
 */
import { NotFoundError } from '../../shared/errors';
import type { Prisma, PrismaClient } from '../../storage/prisma';
import { KNOWLEDGE_ONLY } from '../memories/categories';
import { scopeTimeZone } from '../scopes/scope-policy';
import { openConflicts, unlikelySides } from '../memories/conflicts';
import { bodyOf, emptySoul, renderSoul, SOUL_MAX_ENTITIES, SOUL_MIN_CONFIDENCE, SOUL_OBSERVATIONS_PER_PERSON, type SectionKey } from './soul-render';

export interface SoulResult {
  readonly soul: string;
  /** 0 when the scope has no profile yet and nothing to put in one. */
  readonly version: number;
  readonly changed: boolean;
}

/** JSON with sorted keys (PostgreSQL's jsonb does not keep key order). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** Where the soul is read and stored: the client or an open transaction. */
type SoulStore = Pick<Prisma.TransactionClient, 'scope' | 'memory' | 'entity' | 'profile' | 'auditEvent' | 'memoryLink' | 'memorySource'>;

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
  /** SOUL_MAX_TOKENS (default `DEFAULT_SOUL_MAX_TOKENS`, soul-render.ts). */
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
  const believed = await tx.memory.findMany({
    where: { scopeId, active: true, validTo: null, confidence: { gt: SOUL_MIN_CONFIDENCE }, ...KNOWLEDGE_ONLY },
    select: {
      id: true,
      category: true,
      content: true,
      confidence: true,
      importance: true,
      active: true,
      validFrom: true,
      validTo: true,
      lastReinforcedAt: true,
      reinforcementCount: true,
    },
  });
  // While two memories contradict, the soul states only the side most likely current (conflicts.ts).
  const unlikely = unlikelySides(await openConflicts(tx, scopeId));
  const memories = believed.filter((m) => !unlikely.has(m.id));
  const entities = await tx.entity.findMany({
    where: { scopeId, kind: { in: ['person', 'pet'] } },
    select: {
      name: true,
      kind: true,
      favorability: true,
      attributes: true,
      observations: { select: { content: true }, orderBy: { createdAt: 'desc' }, take: SOUL_OBSERVATIONS_PER_PERSON },
    },
    orderBy: [{ favorability: 'desc' }, { name: 'asc' }],
    take: SOUL_MAX_ENTITIES,
  });
  // The scope policy's zone; a caller that names no default zone for a scope naming none (a
  // tool, a test) gets a soul without a zone line, as the renderer does for a null zone.
  const timeZone = scope.timezone === null && options.defaultTimeZone === undefined ? null : scopeTimeZone(scope, options.defaultTimeZone);
  const rendered = renderSoul({ name: scope.title ?? scope.key, timeZone, memories, entities, updatedAt: options.now, maxTokens: options.maxTokens });
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
    data: {
      scopeId,
      runId: options.runId ?? null,
      action: 'soul',
      subjectType: 'profile',
      subjectId: scopeId,
      after: { version, memories: rendered.memoryCount },
      createdAt: options.now,
    },
  });
  return { soul: rendered.soul, version, changed: true };
}

/** The stored soul, or a short document saying nothing has been learned yet. */
export async function soulMarkdown(prisma: PrismaClient, scopeId: string): Promise<string> {
  const profile = await prisma.profile.findUnique({ where: { scopeId }, select: { soul: true } });
  if (profile) return profile.soul;
  const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { key: true, title: true } });
  if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
  return emptySoul(scope.title ?? scope.key);
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
