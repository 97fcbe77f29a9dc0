/**
 * The writes of the sqlite-vec index: storing, deleting by id and deleting a scope.
 *
 * Each write is one IMMEDIATE transaction on `items`, `vec_items` and `scope_versions` (the
 * version tells other processes their copy of the scope is stale); this process's own in-memory
 * int8 copy is brought up to date only after the commit, so a write rolled back by a lock leaves
 * it as it was and can simply run again.
 */
import { floatBlob } from './float-vectors';
import { quantize } from './int8-scope-scan';
import { ID_BATCH, placeholders } from './sqlite-vec-file';
import { requireSameIdentity } from './sqlite-vec-identity';
import type { VecSession } from './sqlite-vec-session';
import { checkRecords, checkScope, checkScopeIds } from './vector-checks';
import type { VectorKind, VectorRecord } from '../../memory/vectors/vector-index';

/** The writes of one upsert to one scope, applied to its in-memory int8 copy after the commit. */
interface ScopeChange {
  version: number;
  set: { rowid: number; kind: VectorKind; code: Buffer; scale: number }[];
}

/** Stores the records (the last of each scope and id), all or none. */
export function upsertVectors(session: VecSession, records: readonly VectorRecord[]): void {
  const connection = session.open();
  session.sync();
  const current = session.requireIdentity();
  const latest = checkRecords(records, session.tableDimension(), current.embedder);
  if (latest.size === 0) return;
  const changes = new Map<string, ScopeChange>();
  connection
    .transaction(() => {
      session.sync();
      requireSameIdentity(current, session.identity());
      const s = session.fixed();
      const v = session.vec();
      for (const record of latest.values()) {
        const { code, scale } = quantize(record.vector);
        const blob = floatBlob(record.vector);
        const existing = s.itemByKey.get(record.scopeId, record.id) as { rowid: number } | undefined;
        let rowid: number;
        if (existing) {
          rowid = existing.rowid;
          s.updateItem.run(record.kind, code, scale, rowid);
          v.update.run(blob, record.kind, BigInt(rowid));
        } else {
          rowid = Number(s.insertItem.run(record.scopeId, record.id, record.kind, code, scale).lastInsertRowid);
          v.insert.run(BigInt(rowid), record.scopeId, record.kind, blob);
        }
        let change = changes.get(record.scopeId);
        if (!change) changes.set(record.scopeId, (change = { version: 0, set: [] }));
        change.set.push({ rowid, kind: record.kind, code, scale });
      }
      for (const [scopeId, change] of changes) change.version = session.bumpVersion(scopeId);
    })
    .immediate();
  for (const [scopeId, change] of changes) {
    session.scans.afterWrite(scopeId, change.version, (scan) => {
      for (const item of change.set) scan.set(item.rowid, item.kind, item.code, item.scale);
    });
  }
}

/** Deletes the named ids of one scope (ids it does not hold are ignored). */
export function deleteVectors(session: VecSession, scopeId: string, ids: readonly string[]): void {
  checkScopeIds(scopeId, ids);
  const connection = session.open();
  session.sync();
  if (ids.length === 0) return;
  const removed: number[] = [];
  const version = connection
    .transaction(() => {
      const v = session.vec();
      for (let start = 0; start < ids.length; start += ID_BATCH) {
        const batch = [...new Set(ids.slice(start, start + ID_BATCH))];
        const rows = connection
          .prepare(`SELECT rowid FROM items WHERE scope_id = ? AND id IN (${placeholders(batch)})`)
          .pluck()
          .all(scopeId, ...batch) as number[];
        for (const rowid of rows) {
          v.delete.run(BigInt(rowid));
          session.fixed().deleteItem.run(rowid, scopeId);
          removed.push(rowid);
        }
      }
      return removed.length > 0 ? session.bumpVersion(scopeId) : null;
    })
    .immediate();
  if (version !== null) {
    session.scans.afterWrite(scopeId, version, (scan) => removed.forEach((rowid) => scan.remove(rowid)));
  }
}

/** Deletes every vector of one scope. */
export function deleteScopeVectors(session: VecSession, scopeId: string): void {
  checkScope(scopeId);
  const connection = session.open();
  session.sync();
  connection
    .transaction(() => {
      const v = session.vec();
      const rowids = session.fixed().scopeRowids.all(scopeId) as number[];
      for (const rowid of rowids) v.delete.run(BigInt(rowid));
      session.fixed().deleteScopeItems.run(scopeId);
      if (rowids.length > 0) session.bumpVersion(scopeId);
    })
    .immediate();
  session.scans.drop(scopeId);
}
