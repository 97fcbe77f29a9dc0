/**
 * The sleep scheduler on a real SQLite file, with a recording SleepJobs double standing in for
 * the consolidation, decay and digest work (the port's other side, written elsewhere).
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createLeases } from '../../src/sleep/lease';
import { createSleepScheduler, type SleepScheduler, type SleepSchedulerOptions } from '../../src/sleep/scheduler';
import type { SleepJobContext, SleepJobKind, SleepJobOutcome, SleepJobs } from '../../src/sleep/sleep-jobs';
import { openDatabase, type Database } from '../../src/storage/database';
import type { PrismaClient, Scope } from '../../src/storage/prisma';
import { createScopeRepository } from '../../src/storage/scope-repository';
import { sqliteDatabase } from '../support/databases';
import { memoryLogger } from '../support/logger';

const NOW = new Date('2024-05-01T03:00:00Z');
const minutes = (n: number) => n * 60_000;
const ago = (ms: number, from = NOW) => new Date(from.getTime() - ms);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Call {
  readonly kind: SleepJobKind;
  readonly scopeId: string;
  readonly ctx: SleepJobContext;
}

type Behaviour = (scopeId: string, ctx: SleepJobContext) => Promise<SleepJobOutcome>;

/** Records every call; each kind does what the test told it to (succeeds by default). */
function recordingJobs() {
  const calls: Call[] = [];
  const behaviours: Partial<Record<SleepJobKind, Behaviour>> = {};
  const handle =
    (kind: SleepJobKind) =>
    async (scopeId: string, ctx: SleepJobContext): Promise<SleepJobOutcome> => {
      calls.push({ kind, scopeId, ctx });
      return behaviours[kind]?.(scopeId, ctx) ?? { status: 'succeeded' };
    };
  const jobs: SleepJobs = { consolidate: handle('consolidate'), decay: handle('decay'), digest: handle('digest') };
  return {
    jobs,
    calls,
    of: (kind: SleepJobKind) => calls.filter((call) => call.kind === kind),
    on: (kind: SleepJobKind, behaviour: Behaviour) => void (behaviours[kind] = behaviour),
  };
}

/** A promise the test resolves by hand. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

describe('sleep scheduler (SQLite, real file)', () => {
  let db: Database;
  let prisma: PrismaClient;
  let log: ReturnType<typeof memoryLogger>;
  let double: ReturnType<typeof recordingJobs>;
  let schedulers: SleepScheduler[];
  let keys = 0;

  beforeEach(async () => {
    log = memoryLogger();
    db = await openDatabase({ database: sqliteDatabase(), logger: log.logger });
    prisma = db.prisma;
    double = recordingJobs();
    schedulers = [];
  });
  afterEach(async () => {
    await Promise.all(schedulers.map((scheduler) => scheduler.stop()));
    await db.close();
  });

  function scheduler(options: Partial<SleepSchedulerOptions> = {}, clock: () => Date = () => NOW): SleepScheduler {
    const created = createSleepScheduler({ prisma, jobs: double.jobs, logger: log.logger, clock, options: { wakeCheckMs: 20, minEpisodes: 10, ...options } });
    schedulers.push(created);
    return created;
  }

  async function scope(
    fields: Partial<Pick<Scope, 'lastMessageAt' | 'paused' | 'timezone' | 'ownerId'>> & { settings?: object; episodes?: number } = {},
  ): Promise<Scope> {
    const { settings, episodes = 0, ...rest } = fields;
    const created = await prisma.scope.create({ data: { key: `test:${keys++}`, channel: 'test', ...rest, settings: settings ?? undefined } });
    if (episodes > 0) await addEpisodes(created.id, episodes);
    return created;
  }

  async function addEpisodes(scopeId: string, count: number, extra: { consolidationAttempts?: number; consolidated?: boolean } = {}): Promise<void> {
    await prisma.episode.createMany({
      data: Array.from({ length: count }, (_, i) => ({
        scopeId,
        channel: 'test',
        role: 'user',
        content: `message ${i}`,
        timestamp: ago(minutes(600 - i)),
        contentHash: `hash-${scopeId}-${i}-${Math.random()}`,
        ...extra,
      })),
    });
  }

  async function spend(scopeId: string, tokens: number, at: Date): Promise<void> {
    await prisma.llmCall.create({
      data: {
        scopeId,
        purpose: 'consolidation',
        provider: 'test',
        model: 'test',
        status: 'ok',
        inputTokens: Math.ceil(tokens / 2),
        outputTokens: Math.floor(tokens / 2),
        createdAt: at,
      },
    });
  }

  const calledScopes = (kind: SleepJobKind) =>
    double
      .of(kind)
      .map((call) => call.scopeId)
      .sort();

  describe('consolidation selection', () => {
    it('picks idle, unpaused scopes with enough episodes inside their window, and says why it left the others', async () => {
      const due = await scope({ episodes: 12, lastMessageAt: ago(minutes(120)) });
      const neverTalked = await scope({ episodes: 10 });
      const talking = await scope({ episodes: 12, lastMessageAt: ago(minutes(10)) });
      const quickSleeper = await scope({ episodes: 12, lastMessageAt: ago(minutes(10)), settings: { idleMinutes: 5 } });
      const few = await scope({ episodes: 9, lastMessageAt: ago(minutes(120)) });
      const paused = await scope({ episodes: 12, paused: true });
      // 03:00 UTC is 05:00 in Madrid: inside 03:00-07:00 there, outside 22:00-02:00 UTC.
      const inWindow = await scope({ episodes: 12, timezone: 'Europe/Madrid', settings: { sleepWindow: { startHour: 3, durationHours: 4 } } });
      const outOfWindow = await scope({ episodes: 12, settings: { sleepWindow: { startHour: 22, durationHours: 4 } } });
      const alreadyDone = await scope({ episodes: 2 });
      await addEpisodes(alreadyDone.id, 20, { consolidated: true });
      const stuck = await scope({ episodes: 7 });
      await addEpisodes(stuck.id, 5, { consolidationAttempts: 5 });
      const broken = await scope({ episodes: 12, settings: { sleepWindow: { startHour: 30, durationHours: 8 } } });

      const report = await scheduler().runConsolidation();

      expect(report.busy).toBe(false);
      expect(calledScopes('consolidate')).toEqual([due.id, neverTalked.id, quickSleeper.id, inWindow.id].sort());
      const statusOf = (id: string) => report.scopes.find((s) => s.scopeId === id);
      expect(statusOf(talking.id)).toMatchObject({ status: 'not-due', detail: expect.stringContaining('not idle') });
      expect(statusOf(few.id)).toMatchObject({
        status: 'not-due',
        detail: "9 unconsolidated episodes, the person's oldest 10 h old (needs 10, or a message that would wait over 24 h)",
      });
      expect(statusOf(outOfWindow.id)).toMatchObject({ status: 'not-due', detail: expect.stringContaining('outside the sleep window') });
      expect(statusOf(alreadyDone.id)).toMatchObject({ status: 'not-due' });
      expect(statusOf(stuck.id)).toMatchObject({
        status: 'not-due',
        detail: "7 unconsolidated episodes, the person's oldest 10 h old (needs 10, or a message that would wait over 24 h)",
      });
      expect(statusOf(paused.id)).toBeUndefined();
      expect(statusOf(broken.id)).toMatchObject({ status: 'invalid-settings', detail: expect.stringContaining('sleepWindow.startHour') });
      expect(report.exhausted).toEqual([{ scopeId: stuck.id, scopeKey: stuck.key, episodes: 5 }]);

      const lines = log.lines();
      expect(lines.some((l) => l.includes('invalid settings') && l.includes(broken.key) && l.includes('sleepWindow.startHour'))).toBe(true);
      expect(lines.some((l) => l.includes('too many failed attempts') && l.includes(stuck.key))).toBe(true);
    });

    it('a batch worth a call is due at once; fewer episodes wait until the oldest has waited maxWaitHours', async () => {
      const busy = await scope({ lastMessageAt: ago(minutes(120)) });
      await addEpisodes(busy.id, 40);
      const quiet = await scope({ episodes: 6, lastMessageAt: ago(minutes(120)) });
      const quietForAWeek = await scope({ lastMessageAt: ago(minutes(120)) });
      await prisma.episode.create({
        data: {
          scopeId: quietForAWeek.id,
          channel: 'test',
          role: 'user',
          content: 'said a week ago',
          timestamp: ago(minutes(168 * 60 + 1)),
          contentHash: `week-${quietForAWeek.id}`,
        },
      });
      const report = await scheduler({ minEpisodes: 40, maxWaitHours: 168 }).runConsolidation();
      expect(calledScopes('consolidate')).toEqual([busy.id, quietForAWeek.id].sort());
      expect(report.scopes.find((s) => s.scopeId === quiet.id)).toMatchObject({
        status: 'not-due',
        detail: "6 unconsolidated episodes, the person's oldest 10 h old (needs 40, or a message that would wait over 168 h)",
      });
    });

    it('hands the job its context and records a SleepRun under the run id', async () => {
      const due = await scope({ episodes: 10 });
      await scheduler().runConsolidation();
      const [call] = double.of('consolidate');
      expect(call?.ctx.now).toEqual(NOW);
      expect(call?.ctx.tokenBudgetLeft).toBe(200_000);
      expect(call?.ctx.periodEnd).toBeUndefined();
      const run = await prisma.sleepRun.findUniqueOrThrow({ where: { id: call!.ctx.runId } });
      expect(run).toMatchObject({ scopeId: due.id, kind: 'consolidate', status: 'succeeded', startedAt: NOW, finishedAt: NOW, error: null });
    });

    it('keeps going when one job throws, and records the failure', async () => {
      const first = await scope({ episodes: 10 });
      const second = await scope({ episodes: 10 });
      double.on('consolidate', async (scopeId) => {
        if (scopeId === first.id) throw new Error('model unreachable');
        return { status: 'succeeded' };
      });
      const report = await scheduler().runConsolidation();
      expect(calledScopes('consolidate')).toEqual([first.id, second.id].sort());
      expect(report.scopes.map((s) => s.status).sort()).toEqual(['failed', 'succeeded']);
      const failed = await prisma.sleepRun.findFirstOrThrow({ where: { scopeId: first.id } });
      expect(failed).toMatchObject({ status: 'failed', error: 'model unreachable' });
      expect(log.lines().some((l) => l.includes('consolidate failed') && l.includes('model unreachable'))).toBe(true);
    });
  });

  describe('daily token budget', () => {
    it('defers a scope that spent its budget, recording it once a day, and passes what is left to the others', async () => {
      const spent = await scope({ episodes: 10, settings: { dailyTokenBudget: 1_000 } });
      const partly = await scope({ episodes: 10, settings: { dailyTokenBudget: 1_000 } });
      const unlimited = await scope({ episodes: 10, settings: { dailyTokenBudget: 0 } });
      await spend(spent.id, 600, ago(minutes(60)));
      await spend(spent.id, 500, ago(minutes(30)));
      await spend(spent.id, 5_000, ago(minutes(60 * 24))); // yesterday: does not count
      await spend(partly.id, 300, ago(minutes(5)));
      await spend(unlimited.id, 1_000_000, ago(minutes(5)));

      const sleeper = scheduler();
      const first = await sleeper.runConsolidation();
      const second = await sleeper.runConsolidation(new Date(NOW.getTime() + minutes(60)));

      expect(calledScopes('consolidate').filter((id) => id === spent.id)).toEqual([]);
      for (const report of [first, second]) {
        expect(report.scopes.find((s) => s.scopeId === spent.id)).toMatchObject({
          status: 'deferred',
          detail: 'daily token budget spent (1100 of 1000 tokens)',
        });
      }
      const deferred = await prisma.sleepRun.findMany({ where: { scopeId: spent.id } });
      expect(deferred).toHaveLength(1);
      expect(deferred[0]).toMatchObject({ kind: 'consolidate', status: 'deferred', error: 'daily token budget spent (1100 of 1000 tokens)' });
      expect(log.lines().filter((l) => l.includes('"level":"warn"') && l.includes('daily token budget spent'))).toHaveLength(1);

      const left = Object.fromEntries(double.of('consolidate').map((call) => [call.scopeId, call.ctx.tokenBudgetLeft]));
      expect(left[partly.id]).toBe(700);
      expect(left[unlimited.id]).toBe(Infinity);

      // A new local day, a new budget.
      const tomorrow = new Date(NOW.getTime() + minutes(60 * 24));
      await sleeper.runConsolidation(tomorrow);
      expect(double.of('consolidate').find((call) => call.scopeId === spent.id)?.ctx.tokenBudgetLeft).toBe(1_000);
    });

    it('counts the day in the scope time zone', async () => {
      // 03:00 UTC is 23:00 the previous day in New York: calls at 04:00 UTC yesterday count there.
      const newYork = await scope({ episodes: 10, timezone: 'America/New_York', settings: { dailyTokenBudget: 1_000 } });
      await spend(newYork.id, 1_000, ago(minutes(60 * 23)));
      const report = await scheduler().runConsolidation();
      expect(report.scopes[0]).toMatchObject({ status: 'deferred' });
    });
  });

  it('stops a running job when the scope wakes up (a message arrived after it started)', async () => {
    const talker = await scope({ episodes: 10, lastMessageAt: ago(minutes(60)) });
    let batches = 0;
    let saw: boolean | undefined;
    const started = gate();
    double.on('consolidate', async (_scopeId, ctx) => {
      started.open();
      while (ctx.shouldContinue() && batches < 500) {
        batches++;
        await sleep(10);
      }
      saw = ctx.shouldContinue();
      return { status: 'succeeded', detail: `stopped after ${batches} batches` };
    });
    const tick = scheduler().runConsolidation();
    await started.opened;
    await sleep(50);
    expect(batches).toBeGreaterThan(0);
    await createScopeRepository(prisma).touch(talker.id, new Date(NOW.getTime() + minutes(1)));
    const report = await tick;
    expect(saw).toBe(false);
    expect(batches).toBeLessThan(500);
    expect(report.scopes[0]).toMatchObject({ status: 'succeeded', detail: expect.stringMatching(/^stopped after \d+ batches$/) });
    expect(log.lines().some((l) => l.includes('scope woke up'))).toBe(true);
  });

  describe('manual consolidation (consolidateNow)', () => {
    it('ignores idleness, the episode minimum and the window', async () => {
      const busy = await scope({ episodes: 2, lastMessageAt: ago(minutes(1)), settings: { sleepWindow: { startHour: 12, durationHours: 1 } } });
      expect(await scheduler().consolidateNow(busy.id)).toEqual({ status: 'succeeded', detail: undefined, runId: expect.any(String) });
      expect(calledScopes('consolidate')).toEqual([busy.id]);
      expect(await prisma.sleepRun.count({ where: { scopeId: busy.id, status: 'succeeded' } })).toBe(1);
    });

    it('honours pause, the lease and the budget', async () => {
      const sleeper = scheduler();
      const paused = await scope({ episodes: 20, paused: true });
      expect(await sleeper.consolidateNow(paused.id)).toEqual({ status: 'skipped', detail: 'consolidation is paused for this scope' });

      const leased = await scope({ episodes: 20 });
      await prisma.lease.create({ data: { name: `consolidate:${leased.id}`, holder: 'other-process', expiresAt: new Date(NOW.getTime() + minutes(5)) } });
      expect(await sleeper.consolidateNow(leased.id)).toEqual({ status: 'skipped', detail: 'a consolidation of this scope is already running' });

      const broke = await scope({ episodes: 20, settings: { dailyTokenBudget: 100 } });
      await spend(broke.id, 100, ago(minutes(1)));
      expect(await sleeper.consolidateNow(broke.id)).toEqual({
        status: 'deferred',
        detail: 'daily token budget spent (100 of 100 tokens)',
        runId: expect.any(String),
      });

      expect(double.calls).toEqual([]);
      await expect(sleeper.consolidateNow('no-such-scope')).rejects.toMatchObject({ code: 'scope.not_found' });
    });
  });

  describe('pause and resume', () => {
    it('flip Scope.paused with an audit event each, and are no-ops when nothing changes', async () => {
      const owned = await scope({ episodes: 10 });
      const sleeper = scheduler();
      expect(await sleeper.pause(owned.id, 'owner asked')).toBe(true);
      expect(await sleeper.pause(owned.id)).toBe(false);
      expect((await prisma.scope.findUniqueOrThrow({ where: { id: owned.id } })).paused).toBe(true);

      await sleeper.runConsolidation();
      await sleeper.runDecay();
      expect(double.of('consolidate')).toEqual([]);
      expect(calledScopes('decay')).toEqual([owned.id]); // decay still runs on paused scopes

      expect(await sleeper.resume(owned.id)).toBe(true);
      expect(await sleeper.resume(owned.id)).toBe(false);
      await sleeper.runConsolidation();
      expect(calledScopes('consolidate')).toEqual([owned.id]);

      const audit = await prisma.auditEvent.findMany({ where: { scopeId: owned.id }, orderBy: { createdAt: 'asc' } });
      expect(audit.map((event) => [event.action, event.subjectType, event.subjectId])).toEqual([
        ['pause', 'scope', owned.id],
        ['resume', 'scope', owned.id],
      ]);
      expect(audit[0]).toMatchObject({ before: { paused: false }, after: { paused: true }, reason: 'owner asked' });
      await expect(sleeper.pause('no-such-scope')).rejects.toMatchObject({ code: 'scope.not_found' });
    });
  });

  describe('decay', () => {
    it('runs for every scope, each under its own lease and SleepRun', async () => {
      const a = await scope({});
      const b = await scope({ paused: true, lastMessageAt: ago(minutes(1)) });
      const report = await scheduler().runDecay();
      expect(calledScopes('decay')).toEqual([a.id, b.id].sort());
      expect(report.scopes.every((s) => s.status === 'succeeded')).toBe(true);
      expect(await prisma.sleepRun.count({ where: { kind: 'decay', status: 'succeeded' } })).toBe(2);
      expect(await prisma.lease.count()).toBe(0);
    });
  });

  describe('digests', () => {
    it('asks for each owned scope digest once per period, after its local digest time', async () => {
      // Madrid is UTC+2 in May: 21:00 there is 19:00 UTC.
      const madrid = await scope({ ownerId: 'alice', timezone: 'Europe/Madrid' });
      const early = await scope({ ownerId: 'bob', settings: { digestTime: '08:00' } });
      await scope({}); // no owner: never
      double.on('digest', async (scopeId, ctx) => {
        await prisma.digest.create({
          data: { scopeId, periodStart: new Date(ctx.periodEnd!.getTime() - minutes(60 * 24)), periodEnd: ctx.periodEnd!, content: '1. something', items: [] },
        });
        return { status: 'succeeded' };
      });
      const sleeper = scheduler({}, () => new Date('2024-05-01T18:55:00Z'));

      await sleeper.runDigests(); // 20:55 in Madrid, 18:55 UTC for bob
      expect(double.of('digest').map((call) => [call.scopeId, call.ctx.periodEnd?.toISOString()])).toEqual([[early.id, '2024-05-01T08:00:00.000Z']]);

      await sleeper.runDigests(new Date('2024-05-01T19:00:00Z'));
      await sleeper.runDigests(new Date('2024-05-01T19:05:00Z'));
      await sleeper.runDigests(new Date('2024-05-01T21:55:00Z')); // 23:55 in Madrid
      expect(double.of('digest').map((call) => [call.scopeId, call.ctx.periodEnd?.toISOString()])).toEqual([
        [early.id, '2024-05-01T08:00:00.000Z'],
        [madrid.id, '2024-05-01T19:00:00.000Z'],
      ]);

      // 22:05 UTC is already May 2 in Madrid, before its digest time: nothing due.
      await sleeper.runDigests(new Date('2024-05-01T22:05:00Z'));
      await sleeper.runDigests(new Date('2024-05-02T19:01:00Z'));
      expect(
        double
          .of('digest')
          .slice(2)
          .map((call) => [call.scopeId, call.ctx.periodEnd?.toISOString()])
          .sort(),
      ).toEqual(
        [
          [madrid.id, '2024-05-02T19:00:00.000Z'],
          [early.id, '2024-05-02T08:00:00.000Z'],
        ].sort(),
      );
      expect(await prisma.digest.count()).toBe(4);
    });

    it('does not ask again after a job that skipped, and retries a failing one up to maxAttempts', async () => {
      const quiet = await scope({ ownerId: 'q' });
      const flaky = await scope({ ownerId: 'f' });
      double.on('digest', async (scopeId) =>
        scopeId === quiet.id ? { status: 'skipped', detail: 'nothing learned' } : { status: 'failed', detail: 'channel down' },
      );
      const sleeper = scheduler({ maxAttempts: 2 });
      for (const hhmm of ['21:00', '21:05', '21:10', '21:15']) await sleeper.runDigests(new Date(`2024-05-01T${hhmm}:00Z`));
      expect(double.of('digest').filter((call) => call.scopeId === quiet.id)).toHaveLength(1);
      expect(double.of('digest').filter((call) => call.scopeId === flaky.id)).toHaveLength(2);
    });
  });

  describe('concurrency', () => {
    it('does not start a tick while the previous one of the same kind is still running', async () => {
      await scope({ episodes: 10 });
      const release = gate();
      const started = gate();
      double.on('consolidate', async () => {
        started.open();
        await release.opened;
        return { status: 'succeeded' };
      });
      const sleeper = scheduler();
      const first = sleeper.runConsolidation();
      await started.opened;
      const second = await sleeper.runConsolidation();
      expect(second).toMatchObject({ busy: true, scopes: [] });
      // Another kind is not blocked.
      expect((await sleeper.runDecay()).busy).toBe(false);
      release.open();
      expect((await first).busy).toBe(false);
      expect(double.of('consolidate')).toHaveLength(1);
    });

    it('leaves a scope to the process that holds its lease', async () => {
      const shared = await scope({ episodes: 10 });
      const release = gate();
      const started = gate();
      double.on('consolidate', async () => {
        started.open();
        await release.opened;
        return { status: 'succeeded' };
      });
      const first = scheduler().runConsolidation();
      await started.opened;
      // A second process: its own scheduler and holder id on the same database.
      const other = createSleepScheduler({
        prisma,
        jobs: double.jobs,
        logger: log.logger,
        clock: () => NOW,
        leases: createLeases({ prisma, clock: () => NOW }),
        options: { minEpisodes: 10 },
      });
      schedulers.push(other);
      const report = await other.runConsolidation();
      expect(report.scopes).toEqual([expect.objectContaining({ scopeId: shared.id, status: 'busy' })]);
      release.open();
      await first;
      expect(double.of('consolidate')).toHaveLength(1);
      expect(log.lines().some((l) => l.includes('another process holds the lease'))).toBe(true);
    });

    it('stop() tells running jobs to stop and waits for them to finish', async () => {
      await scope({ episodes: 10 });
      const started = gate();
      let finished = false;
      double.on('consolidate', async (_scopeId, ctx) => {
        started.open();
        while (ctx.shouldContinue()) await sleep(10);
        await sleep(100); // finishing the current batch
        finished = true;
        return { status: 'succeeded', detail: 'stopped early' };
      });
      const sleeper = scheduler();
      const tick = sleeper.runConsolidation();
      await started.opened;
      await sleeper.stop();
      expect(finished).toBe(true);
      expect((await tick).scopes[0]).toMatchObject({ status: 'succeeded', detail: 'stopped early' });
      expect(await prisma.sleepRun.count({ where: { status: 'succeeded' } })).toBe(1);
      // Once stopped, ticks do nothing.
      expect((await sleeper.runDecay()).busy).toBe(true);
      expect(double.of('decay')).toEqual([]);
    });
  });

  it('start() wires the crons to the ticks (a real croner firing every second)', async () => {
    const due = await scope({ episodes: 10 });
    const sleeper = scheduler({ consolidateCron: '* * * * * *', decayCron: '0 0 1 1 *', digestCheckCron: '0 0 1 1 *' }, () => new Date());
    sleeper.start();
    await until(() => double.of('consolidate').length > 0, 5_000);
    await sleeper.stop();
    expect(double.of('consolidate')[0]?.scopeId).toBe(due.id);
    expect(double.of('decay')).toEqual([]);
    const fired = double.of('consolidate').length;
    await sleep(1_200);
    expect(double.of('consolidate')).toHaveLength(fired); // stopped: no more firings
  });
});
