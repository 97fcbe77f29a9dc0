/**
 * Database leases on real SQLite files and a real PostgreSQL, each "process" with its own
 * connection (its own Prisma client), as two Nocturne processes sharing a database would be.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Config } from '../../src/config/load-config';
import { spawn } from 'node:child_process';
import { createLeases, holderIsGone, newHolderId, type Leases } from '../../src/sleep/lease';
import { openDatabase, type Database } from '../../src/storage/database';
import { postgresAvailable, postgresDatabase, postgresSkipReason, sqliteDatabase } from '../support/databases';
import { memoryLogger } from '../support/logger';

interface LeaseInitializer {
  readonly name: string;
  readonly skip?: () => string | undefined;
  readonly database: () => Promise<Config['database']>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A clock the test moves by hand. */
function manualClock(start = Date.parse('2024-05-01T10:00:00Z')) {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
}

function describeLeases(init: LeaseInitializer): void {
  const skipReason = init.skip?.();
  if (skipReason) {
    describe(`sleep leases: ${init.name}`, () => {
      it.skip(`skipped: ${skipReason}`, () => undefined);
    });
    return;
  }

  describe(`sleep leases: ${init.name}`, () => {
    let first: Database;
    let second: Database;
    let n = 0;
    const fresh = () => `lease-${n++}`;

    beforeAll(async () => {
      const { logger } = memoryLogger();
      const database = await init.database();
      first = await openDatabase({ database, logger });
      second = await openDatabase({ database, logger, migrate: false });
    });
    afterAll(async () => {
      await first?.close();
      await second?.close();
    });

    it('lets exactly one of two holders win a race, however many tries each makes', async () => {
      for (let round = 0; round < 5; round++) {
        const name = fresh();
        const a = createLeases({ prisma: first.prisma, holder: 'a' });
        const b = createLeases({ prisma: second.prisma, holder: 'b' });
        const tries = Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a.acquire(name, 'a', 60_000) : b.acquire(name, 'b', 60_000)));
        const results = await Promise.all(tries);
        expect(results.filter(Boolean)).toHaveLength(1);
        const row = await first.prisma.lease.findUniqueOrThrow({ where: { name } });
        const winner = results.findIndex(Boolean) % 2 === 0 ? 'a' : 'b';
        expect(row.holder).toBe(winner);
      }
    });

    it('lets exactly one of two holders take over an expired lease', async () => {
      const name = fresh();
      const clock = manualClock();
      const gone = createLeases({ prisma: first.prisma, clock: clock.now });
      expect(await gone.acquire(name, 'gone', 1_000)).toBe(true);
      clock.advance(5_000);
      const a = createLeases({ prisma: first.prisma, clock: clock.now });
      const b = createLeases({ prisma: second.prisma, clock: clock.now });
      const results = await Promise.all([
        a.acquire(name, 'a', 60_000),
        b.acquire(name, 'b', 60_000),
        a.acquire(name, 'a', 60_000),
        b.acquire(name, 'b', 60_000),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('refuses a held lease until it expires, then hands it over; the old holder can no longer renew', async () => {
      const name = fresh();
      const clock = manualClock();
      const leases = createLeases({ prisma: first.prisma, clock: clock.now });
      const other = createLeases({ prisma: second.prisma, clock: clock.now });
      expect(await leases.acquire(name, 'a', 1_000)).toBe(true);
      // Not even its own holder takes it twice: a second acquire means a second job.
      expect(await leases.acquire(name, 'a', 1_000)).toBe(false);
      clock.advance(999);
      expect(await other.acquire(name, 'b', 1_000)).toBe(false);
      clock.advance(2);
      expect(await other.acquire(name, 'b', 1_000)).toBe(true);
      expect(await leases.renew(name, 'a', 1_000)).toBe(false);
      expect((await first.prisma.lease.findUniqueOrThrow({ where: { name } })).holder).toBe('b');
    });

    it('renewal pushes the expiry forward', async () => {
      const name = fresh();
      const clock = manualClock();
      const a = createLeases({ prisma: first.prisma, clock: clock.now });
      const b = createLeases({ prisma: second.prisma, clock: clock.now });
      expect(await a.acquire(name, 'a', 1_000)).toBe(true);
      clock.advance(900);
      expect(await a.renew(name, 'a', 1_000)).toBe(true);
      clock.advance(600); // 1500 ms after the start: past the first expiry, inside the renewed one
      expect(await b.acquire(name, 'b', 1_000)).toBe(false);
      clock.advance(500);
      expect(await b.acquire(name, 'b', 1_000)).toBe(true);
    });

    it('ignores a release by anyone but the holder', async () => {
      const name = fresh();
      const a = createLeases({ prisma: first.prisma });
      const b = createLeases({ prisma: second.prisma });
      expect(await a.acquire(name, 'a', 60_000)).toBe(true);
      expect(await b.release(name, 'b')).toBe(false);
      expect(await first.prisma.lease.findUnique({ where: { name } })).not.toBeNull();
      expect(await b.acquire(name, 'b', 60_000)).toBe(false);
      expect(await a.release(name, 'a')).toBe(true);
      expect(await b.acquire(name, 'b', 60_000)).toBe(true);
    });

    it('withLease runs the work once, keeps the lease renewed past its ttl, and releases it after', async () => {
      const name = fresh();
      const a = createLeases({ prisma: first.prisma, ttlMs: 500, renewEveryMs: 50 });
      const b = createLeases({ prisma: second.prisma, ttlMs: 500, renewEveryMs: 50 });
      let blocked: Awaited<ReturnType<Leases['withLease']>> | undefined;
      const result = await a.withLease(name, async (lease) => {
        await sleep(1_100); // more than twice the ttl: only renewals keep it
        blocked = await b.withLease(name, async () => 'should not run');
        expect(lease.lost()).toBe(false);
        return 'done';
      });
      expect(result).toEqual({ acquired: true, value: 'done' });
      expect(blocked).toEqual({ acquired: false, heldBy: a.holder });
      expect(await first.prisma.lease.findUnique({ where: { name } })).toBeNull();
      expect(await b.withLease(name, async () => 'now b')).toEqual({ acquired: true, value: 'now b' });
    });

    it('withLease releases the lease when the work throws', async () => {
      const name = fresh();
      const a = createLeases({ prisma: first.prisma });
      await expect(
        a.withLease(name, async () => {
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await first.prisma.lease.findUnique({ where: { name } })).toBeNull();
    });

    it('takes over at once a lease whose holder died on this machine, never one whose holder runs or is elsewhere', async () => {
      const name = fresh();
      const a = createLeases({ prisma: first.prisma });
      const b = createLeases({ prisma: second.prisma });
      // A holder in another process of this machine that has ended (killed, crashed).
      const child = spawn(process.execPath, ['-e', '0']);
      await new Promise((resolve) => child.on('exit', resolve));
      const dead = newHolderId().replace(/:\d+:([^:]+)$/, `:${child.pid}:$1`);
      // Where the pid namespace cannot be read (no /proc) nothing is taken over early.
      const machineKnown = dead.split(':')[0]!.includes('~');
      expect(holderIsGone(dead)).toBe(machineKnown);
      expect(await a.acquire(name, dead, 60_000)).toBe(true);
      expect(await b.acquire(name, b.holder, 60_000)).toBe(machineKnown);
      if (machineKnown) expect((await first.prisma.lease.findUniqueOrThrow({ where: { name } })).holder).toBe(b.holder);
      // A holder that is alive (this process, another running process) or of another machine waits for the expiry.
      const other = fresh();
      const running = spawn(process.execPath, ['-e', 'setTimeout(() => undefined, 20000)']);
      try {
        for (const holder of [a.holder, newHolderId().replace(/:\d+:([^:]+)$/, `:${running.pid}:$1`), `elsewhere~1:${child.pid}:x`, 'not-a-holder-id']) {
          await first.prisma.lease.deleteMany({ where: { name: other } });
          expect(await a.acquire(other, holder, 60_000)).toBe(true);
          expect({ holder, taken: await b.acquire(other, b.holder, 60_000) }).toEqual({ holder, taken: false });
        }
      } finally {
        running.kill('SIGKILL');
      }
    });

    it('withLease tells the work when the lease was lost to someone else', async () => {
      const name = fresh();
      const { logger, lines } = memoryLogger();
      const a = createLeases({ prisma: first.prisma, ttlMs: 200, renewEveryMs: 30, logger });
      const result = await a.withLease(name, async (lease) => {
        // Another process took it (as if our renewals had stalled past the expiry).
        await second.prisma.lease.update({ where: { name }, data: { holder: 'intruder' } });
        for (let i = 0; i < 50 && !lease.lost(); i++) await sleep(20);
        return lease.lost();
      });
      expect(result).toEqual({ acquired: true, value: true });
      expect(lines().some((line) => line.includes('lease lost'))).toBe(true);
      // Our release left the intruder's lease alone.
      expect((await first.prisma.lease.findUniqueOrThrow({ where: { name } })).holder).toBe('intruder');
    });
  });
}

describeLeases({ name: 'SQLite (two connections to one real file)', database: async () => sqliteDatabase() });
describeLeases({
  name: 'PostgreSQL (two connections to a real server)',
  skip: () => (postgresAvailable() ? undefined : postgresSkipReason()),
  database: postgresDatabase,
});
