/**
 * Replicas on one PostgreSQL write the same episodes from different places: a consolidation marks
 * its batch consolidated while another replica's embedding worker marks some of them embedded.
 * Locking rows in different orders, they can deadlock, and PostgreSQL aborts one of them. Seen in a
 * CI run of the replica test: the consolidation was the victim, logged an error and gave up its
 * batch until the next run. A victim rolled back whole, so the batch is applied again.
 *
 * Made to happen here on purpose: another connection holds episode B, the batch updates A and then
 * waits for B, the other connection then asks for A. The batch waited first, so its backend finds
 * the deadlock and aborts it (PostgreSQL aborts the transaction that detects the cycle).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { applyPlan } from '../../src/sleep/consolidation/apply-plan';
import type { Plan } from '../../src/sleep/consolidation/plan';
import { applyPendingMigrations } from '../../src/storage/migrations/migration-runner';
import { createPostgresClient, createPostgresMigrationAdapter } from '../../src/storage/postgres-driver';
import type { PrismaClient } from '../../src/storage/prisma';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason } from '../support/databases';

const pgDescribe = postgresAvailable() ? describe : describe.skip;

function plan(episodeIds: string[], importance: Plan['importance']): Plan {
  return {
    create: [],
    reinforce: [],
    update: [],
    contradict: [],
    decay: [],
    connect: [],
    importance,
    summaries: [],
    entities: [],
    insights: [],
    episodeIds,
    rejected: [],
  };
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

pgDescribe(`a consolidation batch chosen as a deadlock's victim on PostgreSQL${postgresAvailable() ? '' : ` (${postgresSkipReason()})`}`, () => {
  const clients: pg.Client[] = [];
  let prisma: PrismaClient | undefined;
  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    await prisma?.$disconnect();
  });

  it('is applied again, whole, once the other transaction is done', async () => {
    const url = await createPostgresDatabase();
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url) });
    prisma = createPostgresClient(url);
    const other = new pg.Client({ connectionString: url });
    const watcher = new pg.Client({ connectionString: url });
    clients.push(other, watcher);
    await other.connect();
    await watcher.connect();
    await watcher.query(`INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('s', 'k', 't', 'user', now(), now())`);
    for (const id of ['A', 'B']) {
      await watcher.query(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "content", "timestamp", "contentHash", "createdAt") VALUES ($1, 's', 't', 'user', $2, now(), $1, now())`,
        [id, `episode ${id}`],
      );
    }

    // The other writer holds B.
    await other.query('BEGIN');
    await other.query(`UPDATE "Episode" SET "embeddedWith" = 'x' WHERE "id" = 'B'`);
    const otherPid = (await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;

    // The batch sets A's importance, then waits for B to mark both consolidated.
    const applying = applyPlan(prisma, 's', plan(['A', 'B'], [{ episodeId: 'A', score: 0.9 }]), { now: new Date() });
    const outcome = applying.then(
      () => 'applied',
      (error: unknown) => `failed: ${error instanceof Error ? error.message : String(error)}`,
    );
    const waitingOn = async (pid?: number) =>
      Number(
        (
          await watcher.query(
            `SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND ($1::int IS NULL OR pid = $1::int) AND pid <> pg_backend_pid()`,
            [pid ?? null],
          )
        ).rows[0].n,
      ) > 0;
    await waitFor(() => waitingOn(), 'the batch to wait for episode B');

    // Now the other writer asks for A: a cycle. The batch's backend finds it first and is aborted;
    // the other writer gets A, and commits.
    await other.query(`UPDATE "Episode" SET "embeddedWith" = 'y' WHERE "id" = 'A'`);
    await other.query('COMMIT');
    expect(await waitingOn(otherPid)).toBe(false);

    expect(await outcome).toBe('applied');
    const rows = (await watcher.query(`SELECT "id", "importance", "consolidated", "embeddedWith" FROM "Episode" ORDER BY "id"`)).rows;
    expect(rows).toEqual([
      { id: 'A', importance: 0.9, consolidated: true, embeddedWith: 'y' },
      { id: 'B', importance: 0.5, consolidated: true, embeddedWith: 'x' },
    ]);
    // The deadlock did happen (PostgreSQL counts them per database).
    const deadlocks = (await watcher.query(`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`)).rows[0].n as number;
    expect(deadlocks).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
