/**
 * Forgetting with the service running, and killed (chaos): `npm start` runs as a child process
 * holding the database (its embedding worker reading it), and the real `npm run cli -- forget
 * --words ... --yes` runs beside it.
 *
 * - Run to its end, the forget leaves the words in no byte of `nocturne.db`, its `-wal`,
 *   `vectors.db` or its `-wal` the moment the command returns: no checkpoint is forced by the test.
 * - Killed with SIGKILL at seeded random moments (a third anywhere in the run, a third inside its
 *   transaction, a third just after it committed, when the full-text purge, checkpoints and
 *   vector deletes are under way; two forgets at a time, each in its own scope),
 *   then restarted (`createCore`, the start path of every entry point): either nothing was
 *   forgotten (the memory, its soul line and its messages all still there; the owner forgets again)
 *   or, after the restart's repair, the words are nowhere: no table (FTS5 shadow tables included),
 *   no raw file, not the soul, no digest, no export file, no vector of a forgotten row.
 *
 * Trials: CHAOS_TRIALS (default 12); CHAOS_SEED=<n> replays a run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { exportFolderName } from '../../src/memory/archive/export-paths';
import { exportScope } from '../../src/export/json-export';
import { renderMarkdownExport, writeMarkdownExport } from '../../src/export/markdown-export';
import { buildDigest, markSent } from '../../src/memory/digests/digest';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv } from '../support/run-process';
import { startNocturne, type RunningNocturne } from '../support/service-harness';
import { chaosSeed, createMarkerFactory, markerTail, createRng, elapsed, rawFileHits, scanSqliteTables } from './chaos-support';
import { startCli, trialsPerPhase, waitFor, type Entry } from './crash-support';

interface Planted {
  readonly key: string;
  readonly scopeId: string;
  readonly words: readonly [string, string];
  readonly memoryIds: readonly string[];
}

/** Files under `dir` whose bytes hold one of `needles`. */
function exportHits(dir: string, needles: readonly string[]): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => needles.some((n) => fs.readFileSync(f, 'latin1').toLowerCase().includes(n)));
}

describe('forget with the service running, killed at random moments (chaos)', () => {
  const seed = chaosSeed('forget-kill');
  const rng = createRng(seed);
  const marker = createMarkerFactory(rng, 4);
  const trials = trialsPerPhase(12);
  const started = performance.now();
  const figures: string[] = [];
  let ollama: OllamaDouble;
  let dataDir: string;
  let dbFile: string;
  let config: Config;
  let env: NodeJS.ProcessEnv;
  let service: RunningNocturne;
  let core: Core;
  let planted = 0;

  /** The needles of a phrase: each word and its tail (FTS5 prefix-compresses terms). */
  const needlesOf = (p: Planted) => p.words.flatMap((w) => [w, markerTail(w)]);

  /** Plants a phrase the way the service spreads it: messages, a memory with two versions, an observation, soul, digest, export. */
  async function plant(): Promise<Planted> {
    const key = `terminal:t${planted++}`;
    const words = [marker(), marker()] as const;
    const phrase = `${words[0]} ${words[1]}`;
    const scope = { key, channel: 'terminal', title: 'Ana' };
    const ingest = async (role: 'user' | 'agent', content: string) =>
      (await core.episodeService.ingest(scope, { role, content, author: role === 'user' ? 'Ana' : 'Nocturne', conversationId: key }))!.episode!.id;
    const said = await ingest('user', `I would love a ${phrase} for the hall.`);
    await ingest('agent', `A ${phrase} would suit the hall.`);
    await ingest('user', 'I also like green tea in the morning.');
    const scopeId = (await core.scopes.findByKey(key))!.id;
    const prisma = core.db.prisma;
    const t = new Date(Date.now() - 3_600_000);
    const memoryIds = await prisma.$transaction(async (tx) => {
      await createMemory(tx, { scopeId, category: 'preference', content: 'Ana likes green tea in the morning', confidence: 0.9 }, { now: t, by: 'owner' });
      const v1 = (
        await createMemory(
          tx,
          { scopeId, category: 'goal', content: `Ana would love a ${phrase} for the hall`, confidence: 0.9, sourceEpisodeIds: [said] },
          { now: t },
        )
      ).id;
      const v2 = (
        await supersedeMemory(
          tx,
          scopeId,
          v1,
          { content: `Ana would love a ${phrase} and a lamp`, sourceEpisodeIds: [said] },
          { now: new Date(t.getTime() + 60_000), reason: `a lamp next to the ${phrase}` },
        )
      ).current.id;
      return [v1, v2];
    });
    const bea = await prisma.entity.create({
      data: { scopeId, key: 'bea', name: 'Bea', kind: 'person', favorability: 0.6, attributes: { relation: 'sister' } },
    });
    await prisma.entityObservation.create({ data: { scopeId, entityId: bea.id, episodeId: said, content: `Bea also wants a ${phrase}` } });
    await regenerateSoul(prisma, scopeId, { now: new Date(t.getTime() + 120_000) });
    await markSent(prisma, (await buildDigest(prisma, scopeId, { periodEnd: new Date(t.getTime() + 180_000), now: new Date(t.getTime() + 180_000) })).id);
    await writeMarkdownExport(
      path.join(dataDir, 'exports', exportFolderName({ id: scopeId, key })),
      renderMarkdownExport(await exportScope(prisma, scopeId), { defaultTimeZone: 'UTC' }),
    );
    await core.embeddingWorker.drain();
    return { key, scopeId, words, memoryIds };
  }

  /** Every place still holding the phrase: tables, raw files, exports, vectors of its memories. */
  async function residue(p: Planted, db: Core): Promise<string[]> {
    const needles = needlesOf(p);
    const out = [...new Set(scanSqliteTables(dbFile, needles).hits.map((h) => `table ${h.table}.${h.column}`))];
    for (const file of [dbFile, path.join(dataDir, 'vectors.db')]) for (const h of rawFileHits(file, needles)) out.push(`raw ${path.basename(h.file)}`);
    for (const f of exportHits(path.join(dataDir, 'exports'), needles)) out.push(`export ${path.relative(dataDir, f)}`);
    for (const v of await db.vectorIndex.get(p.scopeId, [...p.memoryIds])) out.push(`vector ${v.id}`);
    return [...new Set(out)];
  }

  const forgetCli = (p: Planted): Entry => startCli(['forget', '--scope', p.key, '--words', p.words.join(' '), '--yes'], env);

  beforeAll(async () => {
    ollama = await startOllamaDouble();
    dataDir = path.join(tempDir('nocturne-chaos-forget-kill-'), 'data');
    dbFile = path.join(dataDir, 'nocturne.db');
    const settings = {
      DATA_DIR: dataDir,
      EMBEDDER: 'ollama',
      OLLAMA_HOST: ollama.url,
      ANTHROPIC_API_KEY: 'sk-ant-forget-kill-0000000',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      SLEEP_ENABLED: 'false',
    };
    env = cleanEnv(settings);
    config = loadConfig({ env: { ...settings, TZ: 'UTC' }, envFile: false });
    core = await createCore(config, memoryLogger().logger);
    service = await startNocturne({ dataDir, env: settings });
  }, 300_000);

  afterAll(async () => {
    await service?.stop();
    await core?.close();
    await ollama?.stop();
    if (dataDir) fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`forget-kill: seed ${seed}; ${figures.join('; ')}; ${elapsed(started)}`);
  });

  it('leaves no byte of the forgotten words in the raw files when the command returns, with the service running', async () => {
    const p = await plant();
    expect((await residue(p, core)).length).toBeGreaterThan(3); // the scans can fail
    const t0 = performance.now();
    const run = forgetCli(p);
    const { code } = await run.ended;
    expect({ code, stderr: code === 0 ? '' : run.stderr() }).toEqual({ code: 0, stderr: '' });
    figures.push(`forget CLI with the service running ${elapsed(t0)}`);
    const left = await residue(p, core);
    figures.push(`residue right after the command ${left.length}`);
    expect(left).toEqual([]);
    expect(service.child.exitCode).toBeNull();
  }, 120_000);

  /** One trial: plants, starts the forget, kills it at a moment of `mode`; the record after the restart. */
  /**
   * The restarts of a pair's two trials take turns. They are two cores in this one process, each
   * with its own connection to the file: while one waits for the other's write lock, better-sqlite3
   * waits synchronously (the busy timeout) and so stops this process's event loop, the other's
   * transaction included, until Prisma's transaction timeout ends it ("Operation has timed out").
   * A service is one core per process; the two forget CLIs killed beside it still run at once.
   */
  let restarts: Promise<unknown> = Promise.resolve();
  function inTurn<T>(work: () => Promise<T>): Promise<T> {
    const turn = restarts.then(work, work);
    restarts = turn.catch(() => undefined);
    return turn;
  }

  async function trial(n: number, p: Planted, mode: 'anywhere' | 'transaction' | 'after commit', runMs: number) {
    const entry = forgetCli(p);
    let point: string;
    if (mode === 'after commit') {
      // Just after the transaction committed: the memory rows are gone, the after-commit work runs.
      let gone = false;
      const poll = setInterval(() => void core.db.prisma.memory.count({ where: { id: { in: [...p.memoryIds] } } }).then((c) => (gone ||= c === 0)), 10);
      await waitFor(() => gone || !entry.running(), { timeoutMs: 60_000 });
      clearInterval(poll);
      const delay = rng.int(301);
      await waitFor(() => !entry.running(), { timeoutMs: delay });
      point = `commit+${delay}ms`;
    } else if (mode === 'transaction') {
      // Inside the transaction: its marker is written just before it begins.
      const prefix = `forget-pending.${entry.child.pid}.`;
      await waitFor(() => !entry.running() || fs.readdirSync(dataDir).some((f) => f.startsWith(prefix)), { timeoutMs: 60_000, intervalMs: 2 });
      const delay = rng.int(61);
      await waitFor(() => !entry.running(), { timeoutMs: delay });
      point = `transaction+${delay}ms`;
    } else {
      const delay = rng.int(Math.max(1, Math.round(runMs)));
      await waitFor(() => !entry.running(), { timeoutMs: delay });
      point = `start+${delay}ms`;
    }
    const killed = entry.kill();
    await entry.ended;
    // The restart: createCore is the start path of the CLI and the service; it repairs.
    return inTurn(() => verify(n, p, killed, point));
  }

  async function verify(n: number, p: Planted, killed: boolean, point: string) {
    const restarted = await createCore(config, memoryLogger().logger);
    try {
      const memories = await restarted.db.prisma.memory.count({ where: { id: { in: [...p.memoryIds] } } });
      let whole = true;
      if (memories > 0) {
        // Nothing forgotten: all of it still there (no half-applied forget), then the owner asks again.
        const soul = (await restarted.db.prisma.profile.findUniqueOrThrow({ where: { scopeId: p.scopeId } })).soul;
        whole = memories === p.memoryIds.length && soul.includes(p.words[0]);
        await (await restarted.forget.forgetMatching(p.scopeId, p.words.join(' '))).confirm();
      }
      const left = await residue(p, restarted);
      return { n, point: `${point}${killed ? '' : ' (ended first)'}${memories === 0 ? ' committed' : ''}`, committed: memories === 0, whole, left };
    } finally {
      await restarted.close();
    }
  }

  it(`kills the forget CLI at ${trials} random moments: afterwards all or nothing, and after the restart no residue`, async () => {
    const modes = ['anywhere', 'transaction', 'after commit'] as const;
    const runMs = performance.now();
    const records: Array<Awaited<ReturnType<typeof trial>>> = [];
    // Two forgets at a time (two processes writing beside the service), to keep the suite short.
    for (let n = 0; n < trials; n += 2) {
      const pair = [await plant(), ...(n + 1 < trials ? [await plant()] : [])];
      records.push(...(await Promise.all(pair.map((p, i) => trial(n + i, p, modes[(n + i) % modes.length]!, 8_000)))));
    }
    const committed = records.filter((r) => r.committed).length;
    const residues = records.reduce((sum, r) => sum + r.left.length, 0);
    figures.push(`${trials} kills (${committed} after the commit) in ${elapsed(runMs)}: residue ${residues}; points ${records.map((r) => r.point).join(', ')}`);
    expect(records.filter((r) => !r.whole || r.left.length > 0)).toEqual([]);
    expect(committed).toBeGreaterThan(0);
    expect(service.child.exitCode).toBeNull();
  }, 600_000);
});
