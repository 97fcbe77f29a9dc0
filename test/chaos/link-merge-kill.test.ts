/**
 * A merge of linked identities killed half-way leaves nothing half-merged and completes on re-run
 * (chaos). Two scopes are filled with something in every table an export covers (the scope
 * fixture: episodes, a supersession chain, links, entities, a digest, the soul, ...), the same
 * person's Telegram chat and terminal. `cli link join terminal:ana telegram:private:7101` runs as
 * a child process with the merge's test pause (LINK_MERGE_PAUSE_MS) and is killed with SIGKILL
 * while its transaction has written the first table under the target.
 *
 * After the kill: every row of both scopes is where it was (counted table by table, walking the
 * scope data map), the link waits as `merging`. Then `cli link resume` completes it: the source
 * scope holds nothing, the target holds the rows of both minus what the merge folds (the
 * source's profile, its digest of the same period, its entities of the same name and its
 * memories that restate the target's, folded by the restatement rule and audited), the full-text
 * index finds the moved episodes under the target only, and the moved rows wait for the
 * embedding worker (their vectors are written under the target; the source's are tombstoned).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { SCOPE_DATA_MAP } from '../../src/memory/scopes/scope-data-map';
import { createSilentLogger } from '../../src/shared/logger';
import { openDatabase } from '../../src/storage/database';
import { seedScope } from '../support/scope-fixture';
import { cleanEnv } from '../support/run-process';
import { sqliteDatabase, tempDir } from '../support/databases';
import { openSqlite, runCliToEnd, scalar, sleepMs, startCli, waitFor } from './crash-support';

const SOURCE = 'terminal:ana';
const TARGET = 'telegram:private:7101';
/** Long enough that the kill lands inside the paused transaction on a loaded machine. */
const PAUSE_MS = 120_000;
/** Time given the merge's transaction to reach its pause once the link is recorded. */
const SETTLE_MS = 3_000;

/** Rows per scoped table of the map, by scope id (raw SQL on the file, as another process sees it). */
function countsOf(file: string, scopeId: string): Record<string, number> {
  const db = openSqlite(file, { readonly: true });
  try {
    const out: Record<string, number> = {};
    for (const entry of SCOPE_DATA_MAP) {
      if (entry.scope.by !== 'scopeId' && entry.scope.by !== 'optionalScopeId') continue;
      if (entry.model === 'VectorTombstone' || entry.model === 'IdentityLink') continue;
      out[entry.model] = scalar(db, `SELECT count(*) FROM "${entry.model}" WHERE "scopeId" = ?`, scopeId);
    }
    return out;
  } finally {
    db.close();
  }
}

describe('a killed merge of linked identities (chaos)', () => {
  const root = tempDir('nocturne-chaos-link-merge-');
  const dataDir = path.join(root, 'data');
  const database = sqliteDatabase(dataDir);
  const env = (extra: Record<string, string> = {}) =>
    cleanEnv({ DATA_DIR: dataDir, TERMINAL: 'off', SLEEP_ENABLED: 'false', EMBEDDER: 'ollama', OLLAMA_HOST: 'http://127.0.0.1:9', ...extra });
  let sourceId: string;
  let targetId: string;
  let before: { source: Record<string, number>; target: Record<string, number> };
  const figures: string[] = [];

  beforeAll(async () => {
    fs.mkdirSync(dataDir, { recursive: true });
    const db = await openDatabase({ database, logger: createSilentLogger() });
    try {
      sourceId = (await seedScope(db.prisma, SOURCE)).scopeId;
      targetId = (await seedScope(db.prisma, TARGET)).scopeId;
    } finally {
      await db.close();
    }
    before = { source: countsOf(database.file, sourceId), target: countsOf(database.file, targetId) };
  }, 120_000);

  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`link-merge-kill: ${figures.join('; ')}`);
  });

  it('leaves both scopes whole when killed inside the merge, and completes it on re-run', async () => {
    const merging = startCli(['link', 'join', SOURCE, TARGET], env({ LINK_MERGE_PAUSE_MS: String(PAUSE_MS) }));
    const linkState = () => {
      const db = openSqlite(database.file, { readonly: true });
      try {
        return (db.prepare('SELECT state FROM "IdentityLink" WHERE "identityKey" = ?').get(SOURCE) as { state: string } | undefined)?.state;
      } finally {
        db.close();
      }
    };
    const recorded = await waitFor(() => linkState() === 'merging', { timeoutMs: 60_000, intervalMs: 100, stop: () => !merging.running() });
    expect({ recorded, stderr: recorded ? '' : merging.stderr() }).toEqual({ recorded: true, stderr: '' });
    await sleepMs(SETTLE_MS);
    expect(merging.running()).toBe(true);
    // The merge's transaction is open (it holds the write lock), so the kill lands inside it.
    const probe = openSqlite(database.file);
    try {
      probe.pragma('busy_timeout = 0');
      expect(() => probe.exec('BEGIN IMMEDIATE')).toThrow(/locked|busy/i);
    } finally {
      probe.close();
    }
    merging.kill();
    await merging.ended;

    const afterKill = { source: countsOf(database.file, sourceId), target: countsOf(database.file, targetId) };
    figures.push(
      `killed at ${Math.round(merging.age())} ms: source ${before.source.Episode} -> ${afterKill.source.Episode} episodes, target ${before.target.Episode} -> ${afterKill.target.Episode}`,
    );
    expect(afterKill).toEqual(before);
    expect(linkState()).toBe('merging');

    const resumed = await runCliToEnd(['link', 'resume', '--json'], env());
    expect(JSON.parse(resumed.stdout())).toEqual({ resumed: 1 });
    expect(linkState()).toBe('linked');

    const source = countsOf(database.file, sourceId);
    const target = countsOf(database.file, targetId);
    figures.push(`after resume: source ${JSON.stringify(source)}, target ${JSON.stringify(target)}`);
    expect(Object.values(source).every((n) => n === 0)).toBe(true);
    // Every episode, conversation, memory and audit trail of both is in the target now.
    for (const model of ['Episode', 'Conversation', 'Memory', 'SleepRun', 'LlmCall'])
      expect({ model, rows: target[model] }).toEqual({ model, rows: before.source[model]! + before.target[model]! });
    // A folded memory's evidence is kept, and the memory it restates cites it too.
    expect(target.MemorySource).toBeGreaterThanOrEqual(before.source.MemorySource! + before.target.MemorySource!);
    // Folded: one profile, one digest per period, one entity per name.
    expect(target.Profile).toBe(before.target.Profile);
    expect(target.Digest).toBe(before.target.Digest);
    expect(target.Entity).toBe(before.target.Entity);
    expect(target.EntityObservation).toBe(before.source.EntityObservation! + before.target.EntityObservation!);

    const db = openSqlite(database.file, { readonly: true });
    try {
      // The same current memories said twice are one current memory, folded by the restatement rule.
      const current = db.prepare('SELECT content FROM "Memory" WHERE "scopeId" = ? AND active = 1 AND "validTo" IS NULL').all(targetId) as Array<{
        content: string;
      }>;
      const contents = current.map((m) => m.content);
      expect(new Set(contents).size).toBe(contents.length);
      const folded = scalar(db, `SELECT count(*) FROM "AuditEvent" WHERE "scopeId" = ? AND action = 'merge'`, targetId);
      figures.push(`${current.length} current memories after folding ${folded}`);
      expect(folded).toBeGreaterThan(0);
      expect(
        scalar(
          db,
          `SELECT count(*) FROM "AuditEvent" WHERE "scopeId" = ? AND action IN ('merge-scope', 'link') AND "subjectType" IN ('scope', 'identity')`,
          targetId,
        ),
      ).toBe(2);
      // The full-text index follows: every episode of the target is indexed under it, none under the source.
      expect(scalar(db, `SELECT count(*) FROM search_doc WHERE scope_id = ? AND kind = 'episode'`, sourceId)).toBe(0);
      expect(scalar(db, `SELECT count(*) FROM search_doc WHERE scope_id = ? AND kind = 'episode'`, targetId)).toBe(target.Episode);
      // Vectors follow: the moved rows wait for the embedding worker, the source's vectors are tombstoned.
      expect(scalar(db, `SELECT count(*) FROM "Episode" WHERE "scopeId" = ? AND "embeddedWith" IS NULL`, targetId)).toBeGreaterThanOrEqual(
        before.source.Episode!,
      );
      expect(scalar(db, `SELECT count(*) FROM "VectorTombstone" WHERE "scopeId" = ?`, sourceId)).toBe(before.source.Episode! + before.source.Memory!);
    } finally {
      db.close();
    }
    // Re-running is harmless.
    const again = await runCliToEnd(['link', 'resume', '--json'], env());
    expect(JSON.parse(again.stdout())).toEqual({ resumed: 0 });
  }, 240_000);
});
