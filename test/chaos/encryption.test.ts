/**
 * Encryption at rest (issue 8, seed 000 "all memory stored locally in encrypted SQLite"): with
 * DATABASE_ENCRYPTION_KEY set, the service works as usual — episodes, full-text, vectors,
 * memories, search — while neither file under DATA_DIR (database, WAL, vectors.db) holds a byte
 * of what was stored, and neither opens without the key. A store written without the key (the
 * control: there the same scan finds the text, so the scan can fail) is encrypted by
 * `npm run cli -- encrypt`, rekeyed, and decrypted again, losing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runCli, runTs } from '../support/run-process';

const KEY = 'correct horse battery staple 42';
const MARKER = 'zebra marmalade quasar';
const MEMORY_MARKER = 'Ana keeps her spare key under the blue flowerpot';
const embedder = () => createHashEmbedder({ dimension: 64 });

/** Every file of a data folder, each as raw bytes. */
function filesOf(dir: string): Map<string, Buffer> {
  return new Map(
    fs
      .readdirSync(dir)
      .filter((f) => fs.statSync(path.join(dir, f)).isFile())
      .map((f) => [f, fs.readFileSync(path.join(dir, f))]),
  );
}

/** Which files hold `text` as bytes (UTF-8, and UTF-16 as some SQLite text may be). */
function holding(dir: string, text: string): string[] {
  const needles = [Buffer.from(text, 'utf8'), Buffer.from(text, 'utf16le')];
  return [...filesOf(dir)].filter(([, bytes]) => needles.some((n) => bytes.includes(n))).map(([name]) => name);
}

async function fill(core: Core): Promise<string> {
  const scope = { key: 'tg:ana', channel: 'test' };
  await core.episodeService.ingestMany(scope, [
    core.episodeService.normalize({ content: `My secret phrase is ${MARKER}`, externalId: 'e1' }, 'test'),
    core.episodeService.normalize({ content: 'The weather was fine on Tuesday', externalId: 'e2' }, 'test'),
  ]);
  const scopeId = (await core.scopes.findByKey('tg:ana'))!.id;
  await core.db.prisma.$transaction((tx) =>
    createMemory(tx, { scopeId, category: 'fact', content: MEMORY_MARKER, confidence: 0.9 }, { by: 'owner', now: new Date() }),
  );
  await core.embeddingWorker.drain();
  return scopeId;
}

async function openCore(dir: string, key: string | undefined, logs = memoryLogger()): Promise<Core> {
  const env: Record<string, string> = { DATA_DIR: dir, ...(key !== undefined && { DATABASE_ENCRYPTION_KEY: key }) };
  return createCore(loadConfig({ env, envFile: false }), logs.logger, { embedder: embedder() });
}

describe('encryption at rest (chaos)', () => {
  const encrypted = tempDir('nocturne-encrypted-');
  const plain = tempDir('nocturne-plain-');
  const logs = memoryLogger();

  beforeAll(async () => {
    for (const [dir, key] of [
      [encrypted, KEY],
      [plain, undefined],
    ] as const) {
      const core = await openCore(dir, key, logs);
      const scopeId = await fill(core);
      // Searched while open: the service works on the encrypted store.
      const found = await core.search.search({ scopeId, semanticQuery: 'secret phrase zebra' });
      expect(found.results[0]!.content).toContain(MARKER);
      expect(found.results[0]!.parts.semantic).toBeGreaterThan(0);
      expect(await core.vectorIndex.count(scopeId, 'episode')).toBe(2);
      await core.close();
    }
  });
  afterAll(() => {
    for (const dir of [encrypted, plain]) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the scan finds the stored text in the files of the plain store (the control)', () => {
    expect(holding(plain, MARKER)).toEqual(expect.arrayContaining(['nocturne.db']));
    expect(holding(plain, MEMORY_MARKER)).toContain('nocturne.db');
    expect(fs.readFileSync(path.join(plain, 'nocturne.db')).subarray(0, 15).toString()).toBe('SQLite format 3');
  });

  it('leaves nothing readable in any file of the encrypted store, the WAL and vectors.db included', () => {
    const files = [...filesOf(encrypted).keys()];
    expect(files).toEqual(expect.arrayContaining(['nocturne.db', 'vectors.db']));
    for (const text of [MARKER, MEMORY_MARKER, 'weather', 'CREATE TABLE', 'Episode', 'tg:ana'])
      expect({ text, files: holding(encrypted, text) }).toEqual({ text, files: [] });
    for (const file of ['nocturne.db', 'vectors.db'])
      expect(fs.readFileSync(path.join(encrypted, file)).subarray(0, 15).toString()).not.toBe('SQLite format 3');
  });

  it('does not open without the key, or with a wrong one, and the errors say why without the key', async () => {
    for (const file of ['nocturne.db', 'vectors.db']) {
      const raw = new Database(path.join(encrypted, file), { fileMustExist: true });
      expect(() => raw.prepare('SELECT count(*) FROM sqlite_master').get()).toThrow(/file is not a database/);
      raw.close();
    }
    await expect(openCore(encrypted, undefined)).rejects.toMatchObject({ code: 'storage.encrypted', hint: expect.stringMatching(/DATABASE_ENCRYPTION_KEY/) });
    const wrong = 'wrong horse battery staple 42';
    const error = await openCore(encrypted, wrong).then(
      () => undefined,
      (e: unknown) => e as Error & { code: string; hint: string },
    );
    expect(error).toMatchObject({ code: 'storage.wrong_key' });
    expect(`${error!.message} ${error!.hint}`).not.toContain(wrong);
    // A key for a plain store is a mistake too, and names the command that fixes it.
    await expect(openCore(plain, KEY)).rejects.toMatchObject({ code: 'storage.not_encrypted', hint: expect.stringMatching(/npm run cli -- encrypt/) });
  });

  it('reopens with the key: everything is there, searchable by keyword and by vector', async () => {
    const core = await openCore(encrypted, KEY);
    try {
      const scopeId = (await core.scopes.findByKey('tg:ana'))!.id;
      expect(core.indexGuard.state().status).toBe('ready');
      const byWords = await core.search.search({ scopeId, semanticQuery: 'zebra marmalade', strategy: 'keyword' });
      expect(byWords.results[0]!.content).toContain(MARKER);
      const byVector = await core.search.search({ scopeId, semanticQuery: 'spare key flowerpot', strategy: 'semantic', kinds: ['memory'] });
      expect(byVector.results[0]!.content).toBe(MEMORY_MARKER);
    } finally {
      await core.close();
    }
    expect(holding(encrypted, MARKER)).toEqual([]);
  });

  it('npm run cli -- encrypt encrypts the plain store in place, --rekey changes the key, --decrypt undoes it; nothing is lost', async () => {
    const env = (key?: string) => cleanEnv({ DATA_DIR: plain, ...(key !== undefined && { DATABASE_ENCRYPTION_KEY: key }) });
    const episodes = async (key?: string) => {
      const run = await runCli(['episodes', '--scope', 'tg:ana', '--json'], env(key));
      expect(run).toMatchObject({ code: 0 });
      return (JSON.parse(run.stdout) as { episodes: Array<{ content: string }> }).episodes.map((e) => e.content);
    };
    const before = await episodes();
    expect(before).toContain(`My secret phrase is ${MARKER}`);

    const noKey = await runCli(['encrypt'], env());
    expect(noKey).toMatchObject({ code: 2, stderr: expect.stringMatching(/DATABASE_ENCRYPTION_KEY is not set/) });

    const done = await runCli(['encrypt', '--json'], env(KEY));
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({
      files: [
        { file: path.join(plain, 'nocturne.db'), outcome: 'encrypted' },
        { file: path.join(plain, 'vectors.db'), outcome: 'encrypted' },
      ],
    });
    expect(holding(plain, MARKER)).toEqual([]);
    expect(holding(plain, MEMORY_MARKER)).toEqual([]);
    expect(await episodes(KEY)).toEqual(before);
    expect((await runCli(['encrypt', '--json'], env(KEY))).stdout).toContain('"unchanged"');

    const next = 'a brand new passphrase, 2026';
    const tooShort = await runCli(['encrypt', '--rekey'], env(KEY));
    expect(tooShort).toMatchObject({ code: 2, stderr: expect.stringMatching(/at least 16 characters/) });
    const rekeyed = await runTs('src/cli/index.ts', ['encrypt', '--rekey'], env(KEY), undefined, `${next}\n`);
    expect(rekeyed).toMatchObject({ code: 0, stdout: expect.stringMatching(/nocturne\.db: rekeyed[\s\S]*vectors\.db: rekeyed/) });
    expect(`${rekeyed.stdout}${rekeyed.stderr}`).not.toContain(next);
    const old = await runCli(['episodes', '--scope', 'tg:ana'], env(KEY));
    expect(old).toMatchObject({ code: 1, stderr: expect.stringMatching(/key is wrong/) });
    expect(await episodes(next)).toEqual(before);

    const decrypted = await runCli(['encrypt', '--decrypt'], env(next));
    expect(decrypted).toMatchObject({ code: 0, stdout: expect.stringMatching(/decrypted/) });
    expect(await episodes()).toEqual(before);
    expect(holding(plain, MARKER)).toContain('nocturne.db');
  }, 120_000);

  it('never logs the key', () => {
    expect(logs.lines().length).toBeGreaterThan(0);
    expect(logs.lines().join('\n')).not.toContain(KEY);
  });
});
