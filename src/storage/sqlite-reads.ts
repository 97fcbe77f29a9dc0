/**
 * Reads that go to the SQLite connection under Prisma's adapter directly, with their prepared
 * statements kept: the hot reads of search (the full-text index's word lists and counts).
 *
 * Why: through Prisma every raw read is prepared again (the adapter keeps no statement) and its rows
 * pass Prisma's result mapping; measured at 100,000 episodes on 2 cores, 250 rows by id cost 3.6 ms
 * of CPU through Prisma against 2.2 ms on a kept statement, and a reply context makes a dozen such
 * reads while the reply waits. The connection is the same one Prisma uses (same key, same
 * transaction state), so a direct read sees exactly what the same read through Prisma would see.
 * Where there is no open registered connection (PostgreSQL, a client made elsewhere, a
 * disconnected client) a read goes through Prisma as before.
 */
import type { PrismaClient } from './prisma';
import { waitWhileBusy } from './sqlite-lock-waits';

/** The part of a better-sqlite3 connection used here. */
export interface StatementSource {
  readonly open: boolean;
  prepare(sql: string): { all(...params: unknown[]): unknown[] };
}

/** Statements kept per connection (the texts of search's reads: a few per kind, one per word count). */
const KEPT_STATEMENTS = 128;

const connections = new WeakMap<object, () => StatementSource | undefined>();
const kept = new WeakMap<StatementSource, Map<string, { all(...params: unknown[]): unknown[] }>>();

/** Makes `prisma`'s reads through {@link sqliteRead} go to `connection()` while it is open. */
export function registerSqliteConnection(prisma: object, connection: () => StatementSource | undefined): void {
  connections.set(prisma, connection);
}

function statement(source: StatementSource, sql: string): { all(...params: unknown[]): unknown[] } {
  let statements = kept.get(source);
  if (!statements) kept.set(source, (statements = new Map()));
  let found = statements.get(sql);
  if (found) {
    // Most recently used last: the first is the one dropped when the map is full.
    statements.delete(sql);
  } else {
    found = source.prepare(sql);
    if (statements.size >= KEPT_STATEMENTS) statements.delete(statements.keys().next().value!);
  }
  statements.set(sql, found);
  return found;
}

/** Whether `prisma`'s reads through {@link sqliteRead} go to an open SQLite connection (SQL in SQLite's dialect). */
export function hasSqliteConnection(prisma: PrismaClient): boolean {
  return connections.get(prisma)?.()?.open === true;
}

/**
 * The rows of one read-only statement (`?` placeholders) on `prisma`'s SQLite connection, or
 * through Prisma where there is none; a lock met is waited out on timers, as Prisma's reads are.
 * Integers come as numbers directly and may come as bigints through Prisma: callers convert.
 */
export async function sqliteRead<T>(prisma: PrismaClient, sql: string, params: readonly unknown[]): Promise<T[]> {
  const source = connections.get(prisma)?.();
  if (!source?.open) return prisma.$queryRawUnsafe<T[]>(sql, ...params);
  return waitWhileBusy(() => statement(source, sql).all(...params) as T[]);
}
