/**
 * Named leases in the database (model Lease), so that two Nocturne processes sharing a database
 * never run the same sleep job on the same scope at once.
 *
 * A lease is a row `{name, holder, expiresAt}`. Taking one is a single conditional write, which
 * both SQLite (writes are serialized) and PostgreSQL (the losing UPDATE re-checks its WHERE clause
 * after the winner commits) make race-safe: either an UPDATE that only matches an expired row, or
 * an INSERT that the primary key refuses when someone else got there first. A holder that dies
 * simply stops renewing and its lease expires. Expiry is judged by each process's clock, so the
 * time-to-live must be much longer than any clock skew between the machines (minutes, not seconds).
 *
 * A holder that died on this machine (killed, crashed: its process id no longer exists) does not
 * make the next process wait for the expiry: the lease is taken over at once, so a restart after
 * a crash resumes the work straight away instead of reporting it "already running" for minutes.
 * "This machine" is the host name and, on Linux, the pid namespace (containers may share a host
 * name, never a pid namespace); where the namespace cannot be read, nothing is taken over early.
 */
import fs from 'node:fs';
import os from 'node:os';
import { uuidv7 } from '../shared/ids';
import type { Logger } from '../shared/logger';
import type { PrismaClient } from '../storage/prisma';

/** What {@link Leases.withLease} hands to the work it protects. */
export interface HeldLease {
  readonly name: string;
  readonly holder: string;
  /** True once a renewal found the lease taken by someone else; the work should stop soon. */
  lost(): boolean;
}

/** The result of {@link Leases.withLease}: the work's value, or who holds the lease instead. */
export type LeaseResult<T> = { readonly acquired: true; readonly value: T } | { readonly acquired: false; readonly heldBy?: string };

export interface Leases {
  /** This process's holder id, used by {@link Leases.withLease}. */
  readonly holder: string;
  /** Takes the lease if nobody holds it, its holder let it expire, or its holder died on this machine; true when taken. */
  acquire(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Extends a lease this holder still owns; false when it is gone or someone else took it. */
  renew(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease back; only its holder can (false, and nothing changes, for anyone else). */
  release(name: string, holder: string): Promise<boolean>;
  /**
   * Runs `fn` while holding the lease, renewing it every `renewEveryMs`, and releases it after,
   * even when `fn` throws. Does not run `fn` at all when the lease is held elsewhere.
   */
  withLease<T>(name: string, fn: (lease: HeldLease) => Promise<T>): Promise<LeaseResult<T>>;
}

export interface LeasesOptions {
  readonly prisma: PrismaClient;
  /** Holder id; defaults to `<hostname>~<pid namespace>:<pid>:<uuid>`, unique per createLeases call. */
  readonly holder?: string;
  /** Time-to-live of leases taken by withLease; default 5 minutes. */
  readonly ttlMs?: number;
  /** Renewal period of withLease; default a third of ttlMs. */
  readonly renewEveryMs?: number;
  readonly clock?: () => Date;
  readonly logger?: Logger;
}

/** Host name and pid namespace of this process; undefined when the namespace cannot be read. */
function machineId(): string | undefined {
  try {
    const namespace = /\[(\d+)\]/.exec(fs.readlinkSync('/proc/self/ns/pid'))?.[1];
    return namespace ? `${os.hostname()}~${namespace}` : undefined;
  } catch {
    return undefined;
  }
}

const MACHINE = machineId();

/** A new holder id for this process: `<machine>:<pid>:<uuid>`. */
export function newHolderId(): string {
  return `${MACHINE ?? os.hostname()}:${process.pid}:${uuidv7()}`;
}

/**
 * Whether `holder` is a process of this machine that no longer exists (it died holding the
 * lease). Holders of other machines, of this process, of a process still running, or not in the
 * `<machine>:<pid>:<uuid>` form are never dead to us.
 */
export function holderIsGone(holder: string): boolean {
  const match = /^(.+):(\d+):[^:]+$/.exec(holder);
  if (!MACHINE || !match || match[1] !== MACHINE) return false;
  const pid = Number(match[2]);
  if (pid === process.pid || !Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === 'P2002';
}

export function createLeases(options: LeasesOptions): Leases {
  const { prisma, logger } = options;
  const clock = options.clock ?? (() => new Date());
  const ttlMs = options.ttlMs ?? 5 * 60_000;
  const renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(ttlMs / 3));
  const holder = options.holder ?? newHolderId();

  const leases: Leases = {
    holder,

    async acquire(name, who, ttl) {
      const now = clock();
      const expiresAt = new Date(now.getTime() + ttl);
      const taken = await prisma.lease.updateMany({
        where: { name, expiresAt: { lt: now } },
        data: { holder: who, expiresAt, createdAt: now },
      });
      if (taken.count === 1) return true;
      try {
        await prisma.lease.create({ data: { name, holder: who, expiresAt, createdAt: now } });
        return true;
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
      // Held, and not expired: by a process of this machine that died? Then it is ours now (the
      // holder in the condition makes two processes restarting at once race safely).
      const current = await prisma.lease.findUnique({ where: { name }, select: { holder: true } });
      if (!current || current.holder === who || !holderIsGone(current.holder)) return false;
      const takenOver = await prisma.lease.updateMany({ where: { name, holder: current.holder }, data: { holder: who, expiresAt, createdAt: now } });
      if (takenOver.count === 1) logger?.info('took over a lease whose holder died on this machine', { lease: name, previousHolder: current.holder });
      return takenOver.count === 1;
    },

    async renew(name, who, ttl) {
      const expiresAt = new Date(clock().getTime() + ttl);
      const renewed = await prisma.lease.updateMany({ where: { name, holder: who }, data: { expiresAt } });
      return renewed.count === 1;
    },

    async release(name, who) {
      const released = await prisma.lease.deleteMany({ where: { name, holder: who } });
      return released.count === 1;
    },

    async withLease(name, fn) {
      if (!(await leases.acquire(name, holder, ttlMs))) {
        const current = await prisma.lease.findUnique({ where: { name }, select: { holder: true } });
        return { acquired: false, heldBy: current?.holder };
      }
      let lost = false;
      // Renewals run one after another on this chain, so none is left behind when fn ends.
      let renewals: Promise<void> = Promise.resolve();
      const timer = setInterval(() => {
        renewals = renewals.then(async () => {
          if (lost) return;
          try {
            if (!(await leases.renew(name, holder, ttlMs))) {
              lost = true;
              logger?.warn('lease lost to another holder; stopping the work it protects', { lease: name });
            }
          } catch (error) {
            logger?.warn('lease renewal failed; will retry', { lease: name, error });
          }
        });
      }, renewEveryMs);
      timer.unref();
      try {
        const value = await fn({ name, holder, lost: () => lost });
        return { acquired: true, value };
      } finally {
        clearInterval(timer);
        await renewals;
        try {
          await leases.release(name, holder);
        } catch (error) {
          logger?.warn('lease release failed; it will expire on its own', { lease: name, error });
        }
      }
    },
  };
  return leases;
}
