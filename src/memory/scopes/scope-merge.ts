/**
 * Merging one person's scope into another when two of their identities are linked
 * (identity-links.ts): every row of the source scope moves to the target, in one transaction, so
 * a merge that is killed leaves both scopes as they were and the next attempt does all of it.
 *
 * The rows to move are found by walking the scope data map (scope-data-map.ts), the one
 * description of a person's data: a model keyed by `scopeId` moves; the scope row's settings and
 * time zone fill what the target lacks; links that pointed into the source now point into the
 * target. Ids are kept (they are unique in the whole store), which is why the source's rows are
 * read first, then deleted, then written under the target: the composite foreign keys that keep
 * scopes apart (prisma/models.prisma) cannot be updated one table at a time.
 *
 * What the two scopes both hold is folded rather than doubled: the target keeps its own profile
 * (the soul is written again from the merged memories by the next sleep), an entity of the same
 * name takes the source's observations, a digest of the same period stays the target's, and a
 * current memory that restates a current memory of the target is merged into it by the guarded
 * writer's restatement rule (restatements.ts, `mergeMemories`), with its evidence kept.
 *
 * The full-text index follows the rows through the database's triggers. Vectors live in another
 * store: the source's are tombstoned (tombstones.ts) and the moved rows are queued for the
 * embedding worker (`embeddedWith` null), which embeds them under the target.
 */
import type { Prisma } from '../../storage/prisma';
import { mergeMemories, type ChangeOrigin } from '../memories/memory-writer';
import { compatibleCategories, isRestatement } from '../memories/restatements';
import { writeTombstones } from '../vectors/tombstones';
import { SCOPE_DATA_MAP } from './scope-data-map';
import { delegateOf } from './scope-data-walk';

type Tx = Prisma.TransactionClient;
type Row = Record<string, unknown>;

/** What {@link mergeScopeRows} moved, by the map's table names, and how many memories it folded. */
export interface MergeCounts {
  readonly moved: Readonly<Record<string, number>>;
  readonly foldedMemories: number;
}

/** A map delegate as the merge uses it: any scoped model's rows, read, written and deleted. */
interface MovableDelegate {
  findMany(args: { where: Row; orderBy?: Row }): Promise<Row[]>;
  createMany(args: { data: Row[] }): Promise<unknown>;
  deleteMany(args: { where: Row }): Promise<unknown>;
}

/** Rows per createMany (SQLite's bound-parameter limit is far above 500 rows of any model). */
const BATCH = 500;

/** Models the merge treats by hand (the scope row itself; bookkeeping that stays where it is). */
const NOT_MOVED = new Set(['Scope', 'IdentityLink', 'VectorTombstone']);

/** The map's models whose rows move, in the map's foreign-key order. */
const MOVED = SCOPE_DATA_MAP.filter((m) => (m.scope.by === 'scopeId' || m.scope.by === 'optionalScopeId') && !NOT_MOVED.has(m.model));

/** A stored JSON null is left out of a createMany (the column's default is null). */
function withoutNullJson(row: Row, json: readonly string[]): Row {
  const out = { ...row };
  for (const column of json) if (out[column] === null) delete out[column];
  return out;
}

/**
 * Moves every row of scope `fromId` into scope `intoId` on `tx` (the caller's transaction), folds
 * restated memories and audits the merge in the target. `pause` runs after the first table is
 * written (a test kills the process there).
 */
export async function mergeScopeRows(tx: Tx, fromId: string, intoId: string, origin: ChangeOrigin, pause?: () => Promise<void>): Promise<MergeCounts> {
  const read = new Map<string, Row[]>();
  for (const entry of MOVED) read.set(entry.model, await (delegateOf(tx, entry) as unknown as MovableDelegate).findMany({ where: { scopeId: fromId } }));

  const rows = await foldConflicts(tx, read, intoId);
  await writeTombstones(
    tx,
    fromId,
    'episode',
    (read.get('Episode') ?? []).map((e) => e.id as string),
  );
  await writeTombstones(
    tx,
    fromId,
    'memory',
    (read.get('Memory') ?? []).map((m) => m.id as string),
  );
  // Children first is not needed: a parent's delete cascades to the source's children, which
  // were read above.
  for (const entry of [...MOVED].reverse()) await (delegateOf(tx, entry) as unknown as MovableDelegate).deleteMany({ where: { scopeId: fromId } });

  const moved: Record<string, number> = {};
  let paused = false;
  for (const entry of MOVED) {
    const list = rows.get(entry.model) ?? [];
    const delegate = delegateOf(tx, entry) as unknown as MovableDelegate;
    const supersessions: Array<[string, string]> = [];
    const data = list.map((row) => {
      const out = withoutNullJson({ ...row, scopeId: intoId }, entry.json);
      if (entry.model === 'Memory' && out.supersededById) {
        supersessions.push([out.id as string, out.supersededById as string]);
        delete out.supersededById;
      }
      return out;
    });
    for (let start = 0; start < data.length; start += BATCH) await delegate.createMany({ data: data.slice(start, start + BATCH) });
    for (const [id, by] of supersessions) await tx.memory.update({ where: { id }, data: { supersededById: by } });
    moved[entry.table] = list.length;
    if (!paused && list.length > 0 && pause) {
      paused = true;
      await pause();
    }
  }

  await mergeScopeRow(tx, fromId, intoId);
  // Identities that already spoke into the source now speak into the target.
  await tx.identityLink.updateMany({ where: { scopeId: fromId, state: { in: ['merging', 'linked'] } }, data: { scopeId: intoId } });
  const foldedMemories = await foldRestatements(
    tx,
    intoId,
    (rows.get('Memory') ?? []).map((m) => m.id as string),
    origin,
  );
  await tx.auditEvent.create({
    data: {
      scopeId: intoId,
      action: 'merge-scope',
      subjectType: 'scope',
      subjectId: fromId,
      after: { moved, foldedMemories },
      reason: origin.reason ?? 'linked identities',
      createdAt: origin.now,
    },
  });
  return { moved, foldedMemories };
}

/**
 * The source's rows as they are written under the target: an entity the target already has (by
 * its unique key) becomes the target's (its observations follow), a digest of a period the target
 * already has stays the target's, a profile stays the target's, an episode's external id the
 * target already uses is dropped (it only served the source channel's idempotence), and moved
 * episodes and memories are queued for embedding under the target.
 */
async function foldConflicts(tx: Tx, read: Map<string, Row[]>, intoId: string): Promise<Map<string, Row[]>> {
  const out = new Map(read);
  if ((read.get('Profile') ?? []).length > 0 && (await tx.profile.findUnique({ where: { scopeId: intoId }, select: { scopeId: true } })))
    out.set('Profile', []);

  const entities = read.get('Entity') ?? [];
  const existing = await tx.entity.findMany({ where: { scopeId: intoId, key: { in: entities.map((e) => e.key as string) } }, select: { id: true, key: true } });
  const entityInto = new Map(existing.map((e) => [e.key, e.id]));
  const renamed = new Map<string, string>();
  for (const e of entities) if (entityInto.has(e.key as string)) renamed.set(e.id as string, entityInto.get(e.key as string)!);
  out.set(
    'Entity',
    entities.filter((e) => !renamed.has(e.id as string)),
  );
  out.set(
    'EntityObservation',
    (read.get('EntityObservation') ?? []).map((o) => (renamed.has(o.entityId as string) ? { ...o, entityId: renamed.get(o.entityId as string) } : o)),
  );

  const periods = new Set((await tx.digest.findMany({ where: { scopeId: intoId }, select: { periodEnd: true } })).map((d) => d.periodEnd.getTime()));
  out.set(
    'Digest',
    (read.get('Digest') ?? []).filter((d) => !periods.has((d.periodEnd as Date).getTime())),
  );

  const episodes = read.get('Episode') ?? [];
  const externalIds = episodes.map((e) => e.externalId).filter((id): id is string => typeof id === 'string');
  const taken = new Set(
    (await tx.episode.findMany({ where: { scopeId: intoId, externalId: { in: externalIds } }, select: { externalId: true } })).map((e) => e.externalId),
  );
  out.set(
    'Episode',
    episodes.map((e) => ({ ...e, embeddedWith: null, ...(taken.has(e.externalId as string) && { externalId: null }) })),
  );
  out.set(
    'Memory',
    (read.get('Memory') ?? []).map((m) => ({ ...m, embeddedWith: null })),
  );
  return out;
}

/** The target's settings and time zone stay; what only the source had set is added. */
async function mergeScopeRow(tx: Tx, fromId: string, intoId: string): Promise<void> {
  const [from, into] = await Promise.all([tx.scope.findUnique({ where: { id: fromId } }), tx.scope.findUnique({ where: { id: intoId } })]);
  if (!from || !into) return;
  const object = (value: unknown): Row => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Row) : {});
  const settings = { ...object(from.settings), ...object(into.settings) };
  await tx.scope.update({
    where: { id: intoId },
    data: {
      ...(Object.keys(settings).length > 0 && { settings: settings as Prisma.InputJsonObject }),
      ...(into.timezone === null && from.timezone !== null && { timezone: from.timezone }),
      ...(from.lastMessageAt && (!into.lastMessageAt || from.lastMessageAt > into.lastMessageAt) && { lastMessageAt: from.lastMessageAt }),
    },
  });
}

/**
 * Folds each moved current memory that says what a current memory of the target already says
 * (the restatement rule on words, both ways, as the dreaming phase folds restatements) into it;
 * returns how many were folded.
 */
async function foldRestatements(tx: Tx, intoId: string, movedIds: readonly string[], origin: ChangeOrigin): Promise<number> {
  if (movedIds.length === 0) return 0;
  const moved = new Set(movedIds);
  const current = await tx.memory.findMany({ where: { scopeId: intoId, active: true, validTo: null }, select: { id: true, content: true, category: true } });
  const own = current.filter((m) => !moved.has(m.id));
  let folded = 0;
  for (const m of current.filter((c) => moved.has(c.id))) {
    const same = own.find(
      (o) => compatibleCategories(m.category, o.category) && isRestatement(m.content, o.content, undefined) && isRestatement(o.content, m.content, undefined),
    );
    if (!same) continue;
    await mergeMemories(tx, intoId, m.id, same.id, { ...origin, reason: `restates memory ${same.id} (linked identities)` });
    folded++;
  }
  return folded;
}
