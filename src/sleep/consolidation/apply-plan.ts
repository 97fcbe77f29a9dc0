/**
 * Applies a consolidation plan in ONE database transaction (seed 000 step 3): every memory
 * change with its audit event, the episodes' model importance, summaries and metadata (topics,
 * entities, tone, task type), entity observations, and the "consolidated" marks. A crash at any moment leaves the batch entirely
 * applied or not at all. Vectors of new memory versions are written after the commit (they live
 * in another store); until then the rows' `embeddedWith` is empty, so the embedding worker
 * backfills them after a crash.
 */
import {
  contradictMemory,
  createMemory,
  decayMemory,
  writeMemory,
  linkMemories,
  reinforceMemory,
  supersedeMemory,
  type ChangeOrigin,
  type Tx,
} from '../../memory/memories/memory-writer';
import type { PrismaClient } from '../../storage/prisma';
import type { Plan } from './plan';
import { redactSecrets } from '../../shared/redact';
import { queryTerms } from '../../storage/full-text';
import { plural } from '../../shared/plural';
import { isWriteConflict } from '../../storage/storage-errors';
import { recordLearnedMetadata } from '../../memory/episodes/episode-metadata';

export interface AppliedPlan {
  /** Ids of memories created (including new versions and contradicting statements). */
  readonly createdMemoryIds: string[];
  readonly counts: Record<string, number>;
}

function entityKey(name: string): string {
  return name.trim().toLowerCase().replace(/\s+/g, ' ');
}

function wordsOf(text: string): Set<string> {
  return new Set(queryTerms(text));
}

/**
 * The evidence of one observation among the episodes the model cited for its entity: those
 * holding the most of the observation's own words (the entity's name left out: every cited
 * episode may name it), or all cited episodes when none holds any. Each observation is stored
 * once per episode of its evidence, so forgetting what one message taught removes the
 * observation taken from it and leaves one another message also supports.
 */
export function evidenceOf(observation: string, entityName: string, cited: ReadonlyArray<{ id: string; content: string }>): string[] {
  const name = wordsOf(entityName);
  const words = [...wordsOf(observation)].filter((w) => !name.has(w));
  const scored = cited.map((e) => {
    const present = wordsOf(e.content);
    return { id: e.id, held: words.filter((w) => present.has(w) || present.has(`${w}s`) || (w.endsWith('s') && present.has(w.slice(0, -1)))).length };
  });
  const best = Math.max(0, ...scored.map((s) => s.held));
  return best === 0 ? cited.map((e) => e.id) : scored.filter((s) => s.held === best).map((s) => s.id);
}

/** The attribute holding an entity's other names (comma-separated keys), reserved: the fold never sets it. */
export const ALIASES_ATTRIBUTE = 'aliases';
/** The attribute saying how a person is related to the owner ("husband"): the soul shows family by it. */
export const RELATION_ATTRIBUTE = 'relation';

function attributesOf(value: unknown): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function aliasesOf(attributes: Record<string, string>): string[] {
  return (attributes[ALIASES_ATTRIBUTE] ?? '')
    .split(',')
    .map((a) => entityKey(a))
    .filter((a) => a !== '');
}

/**
 * One entity per person: `name` is looked up by key and among the recorded aliases; every alias
 * that is an entity of its own ("my partner", learned before the name) is folded into it (its
 * observations moved, its attributes kept where the named entity has none, audited), and the
 * aliases are recorded so later mentions resolve to the same entity.
 */
async function resolveEntity(tx: Tx, scopeId: string, entity: Plan['entities'][number], now: Date) {
  const key = entityKey(entity.name);
  const all = await tx.entity.findMany({ where: { scopeId } });
  let row = all.find((e) => e.key === key) ?? all.find((e) => aliasesOf(attributesOf(e.attributes)).includes(key));
  const aliases = [...new Set((entity.aliases ?? []).map(entityKey).filter((a) => a !== '' && a !== key))];
  if (!row)
    row = await tx.entity.create({
      data: { scopeId, key, name: entity.name.trim(), kind: entity.kind, favorability: 0.3, interactionCount: 0, createdAt: now },
    });
  if (aliases.length === 0) return row;
  let attributes = attributesOf(row.attributes);
  let interactions = row.interactionCount;
  for (const alias of aliases) {
    const other = all.find((e) => e.key === alias && e.id !== row!.id);
    if (!other) continue;
    await tx.entityObservation.updateMany({ where: { scopeId, entityId: other.id }, data: { entityId: row.id } });
    const theirs = attributesOf(other.attributes);
    attributes = { ...theirs, ...attributes, [ALIASES_ATTRIBUTE]: [...new Set([...aliasesOf(attributes), ...aliasesOf(theirs)])].join(', ') };
    interactions += other.interactionCount;
    await tx.entity.delete({ where: { id: other.id } });
    await tx.auditEvent.create({
      data: {
        scopeId,
        action: 'entity',
        subjectType: 'entity',
        subjectId: row.id,
        before: { merged: other.name },
        after: { into: row.name },
        reason: `"${other.name}" is ${row.name}`,
        createdAt: now,
      },
    });
  }
  attributes[ALIASES_ATTRIBUTE] = [...new Set([...aliasesOf(attributes), ...aliases])].join(', ');
  return tx.entity.update({ where: { id: row.id }, data: { attributes, interactionCount: interactions } });
}

async function applyEntities(tx: Tx, scopeId: string, plan: Plan, now: Date): Promise<number> {
  let observations = 0;
  const citedIds = [...new Set(plan.entities.flatMap((e) => e.episodeIds))];
  const contents = new Map(
    (await tx.episode.findMany({ where: { scopeId, id: { in: citedIds } }, select: { id: true, content: true } })).map((e) => [e.id, e.content]),
  );
  for (const entity of plan.entities) {
    const existing = await resolveEntity(tx, scopeId, entity, now);
    const favorability = Math.min(1, Math.max(0, existing.favorability + entity.favorability));
    // The newest word for how the person is related to the owner wins ("girlfriend", then "wife").
    const relation = entity.relation ? redactSecrets(entity.relation).trim().toLowerCase() : '';
    const attributes = relation ? { ...attributesOf(existing.attributes), [RELATION_ATTRIBUTE]: relation } : undefined;
    const row = await tx.entity.update({
      where: { id: existing.id },
      data: { favorability, interactionCount: { increment: 1 }, ...(attributes && { attributes }) },
    });
    const cited = entity.episodeIds.map((id) => ({ id, content: contents.get(id) ?? '' }));
    for (const content of entity.observations) {
      // Like memory contents (memory-writer.ts): a pasted credential never becomes knowledge.
      const text = redactSecrets(content);
      const evidence = cited.length > 0 ? evidenceOf(content, entity.name, cited) : [null];
      for (const episodeId of evidence) await tx.entityObservation.create({ data: { scopeId, entityId: row.id, episodeId, content: text, createdAt: now } });
      observations++;
    }
  }
  return observations;
}

export async function applyPlanInTransaction(tx: Tx, scopeId: string, plan: Plan, origin: ChangeOrigin): Promise<AppliedPlan> {
  const created: string[] = [];
  let restated = 0;
  for (const m of plan.create) {
    // A restatement of a current memory reinforces or revises it (memory-writer.ts `writeMemory`).
    const written = await writeMemory(tx, { scopeId, ...m }, { ...origin, reason: `learned from ${plural(m.sourceEpisodeIds.length, 'episode')}` });
    if (written.action !== 'reinforced') created.push(written.memory.id);
    if (written.restated) restated++;
  }
  for (const r of plan.reinforce)
    await reinforceMemory(tx, scopeId, r.memoryId, r.sourceEpisodeIds, { ...origin, reason: r.reason || 'confirmed by new episodes' });
  for (const u of plan.update) {
    const { current } = await supersedeMemory(
      tx,
      scopeId,
      u.memoryId,
      { content: u.content, sourceEpisodeIds: u.sourceEpisodeIds },
      { ...origin, reason: u.reason || 'corrected by new episodes' },
    );
    created.push(current.id);
  }
  for (const c of plan.contradict) {
    const statement = await createMemory(
      tx,
      { scopeId, ...c.statement, notRestating: c.memoryId },
      { ...origin, reason: `conflicts with an existing memory: ${c.reason}` },
    );
    created.push(statement.id);
    await contradictMemory(tx, scopeId, c.memoryId, statement.id, { ...origin, reason: c.reason || 'conflicting information' });
  }
  // Reflection's insights, through the same guarded write as every memory (restatements fold there too).
  let insights = 0;
  for (const m of plan.insights) {
    const written = await writeMemory(
      tx,
      { scopeId, ...m },
      { ...origin, reason: `reflection: an insight from ${plural(m.sourceEpisodeIds.length, 'episode')}` },
    );
    if (written.action !== 'reinforced') created.push(written.memory.id), insights++;
  }
  for (const d of plan.decay) await decayMemory(tx, scopeId, d.memoryId, d.confidence, { ...origin, reason: d.reason || 'less likely after new episodes' });
  let connected = 0;
  for (const c of plan.connect) if (await linkMemories(tx, scopeId, c.fromId, c.toId, 'related', null, { ...origin, reason: c.relationship })) connected++;
  for (const i of plan.importance)
    await tx.episode.updateMany({ where: { scopeId, id: i.episodeId }, data: { importance: i.score, importanceSource: 'model' } });
  for (const s of plan.summaries) await tx.episode.updateMany({ where: { scopeId, id: s.episodeId }, data: { summary: s.summary } });
  const observations = await applyEntities(tx, scopeId, plan, origin.now);
  const described = await recordLearnedMetadata(tx, scopeId, plan.metadata ?? []);
  await tx.episode.updateMany({ where: { scopeId, id: { in: plan.episodeIds } }, data: { consolidated: true, consolidatedAt: origin.now } });
  return {
    createdMemoryIds: created,
    counts: {
      created: plan.create.length - restated,
      restated,
      reinforced: plan.reinforce.length,
      updated: plan.update.length,
      contradicted: plan.contradict.length,
      decayed: plan.decay.length,
      connected,
      observations,
      insights,
      described,
      episodes: plan.episodeIds.length,
      rejected: plan.rejected.length,
    },
  };
}

/** How often a batch is tried when PostgreSQL aborts it for a write conflict (a deadlock with another replica's writer). */
const WRITE_CONFLICT_ATTEMPTS = 3;

export async function applyPlan(
  prisma: PrismaClient,
  scopeId: string,
  plan: Plan,
  origin: ChangeOrigin,
  extra?: (tx: Tx) => Promise<void>,
): Promise<AppliedPlan> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await prisma.$transaction(
        async (tx) => {
          const applied = await applyPlanInTransaction(tx, scopeId, plan, origin);
          if (extra) await extra(tx);
          return applied;
        },
        { timeout: 60_000, maxWait: 30_000 },
      );
    } catch (error) {
      // A deadlock's victim rolled back whole (storage-errors.ts): run it again, after a pause
      // that lets the other transaction finish.
      if (!isWriteConflict(error) || attempt >= WRITE_CONFLICT_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 100));
    }
  }
}
