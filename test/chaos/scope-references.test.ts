/**
 * Hostile input, round three: references between a scope's rows, and exported episodes' dates.
 *
 * - `POST /scopes/:id/import` (the admin API of the composed service, as `npm start` runs it) with
 *   an entity observation citing ANOTHER scope's episode is refused with a 400 naming the row, and
 *   nothing is written; so is an episode dated 9999 or before 1970 (the ingest path's rule) and an
 *   episode whose content is only zero-width and control characters.
 * - The database itself refuses the cross-scope link (composite foreign key), on SQLite and
 *   PostgreSQL.
 * - A store written before the key, holding such a link, is migrated by the next start of a real
 *   entry point (`npm run cli -- scopes` as a child process): the observation stays, its link is
 *   dropped and the scope's audit log records it; a link within the scope is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { applyPendingMigrations, DEFAULT_PRISMA_DIR } from '../../src/storage/migrations/migration-runner';
import { createPostgresMigrationAdapter } from '../../src/storage/postgres-driver';
import { createSqliteMigrationAdapter } from '../../src/storage/sqlite-driver';
import { createPostgresDatabase, postgresAvailable, postgresSkipReason, tempDir } from '../support/databases';
import { exportEpisode, exportTime } from '../support/export-rows';
import { memoryLogger } from '../support/logger';
import { cleanEnv } from '../support/run-process';
import { elapsed, freePort } from './chaos-support';
import { runCliToEnd } from './crash-support';

const ADMIN_TOKEN = 'adm-scope-refs-0123456789abcdef';
/** The migration that adds the composite key; a store "from before" has every migration but it. */
const KEY_MIGRATION = '20261127150441_entity_observation_episode_scope';

const SCOPE_A = '0190a000-0000-7000-8000-00000000000a';
const SCOPE_B = '0190a000-0000-7000-8000-00000000000b';
const EPISODE_A = '0190a000-0000-7000-8000-0000000000e1';

/** An export document of one scope with `episodes` and `entities` (every other table empty). */
function exportOf(scopeId: string, key: string, episodes: unknown[], entities: unknown[] = []): Record<string, unknown> {
  const at = exportTime(0);
  return {
    format: 'nocturne.scope-export',
    version: 1,
    scope: {
      id: scopeId,
      key,
      channel: 'import',
      kind: 'user',
      title: null,
      ownerId: null,
      timezone: null,
      paused: false,
      settings: null,
      lastMessageAt: null,
      createdAt: at,
      updatedAt: at,
    },
    profile: null,
    conversations: [],
    episodes,
    memories: [],
    memoryLinks: [],
    entities,
    digests: [],
    sleepRuns: [],
    auditEvents: [],
  };
}

function entityCiting(scope: string, episodeId: string): Record<string, unknown> {
  const at = exportTime(1);
  return {
    id: `${scope}-ent`,
    key: 'ana',
    name: 'Ana',
    kind: 'person',
    attributes: null,
    favorability: 0.3,
    interactionCount: 1,
    createdAt: at,
    updatedAt: at,
    observations: [{ id: `${scope}-obs`, episodeId, content: 'Ana likes tea', consolidated: false, createdAt: at }],
  };
}

/** A copy of prisma/ without the composite key's migration: the schema a store had before it. */
function prismaDirBefore(): string {
  const dir = path.join(tempDir('nocturne-prisma-before-'), 'prisma');
  fs.cpSync(DEFAULT_PRISMA_DIR, dir, { recursive: true, verbatimSymlinks: true });
  for (const provider of ['sqlite', 'postgres']) fs.rmSync(path.join(dir, provider, 'migrations', KEY_MIGRATION), { recursive: true, force: true });
  return dir;
}

/** Rows a store from before the key may hold: scopes A and B, an episode each, B's entity with
 * three observations (citing A's episode, a deleted episode, and B's own episode). */
const SEED_SQL = `
  INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('sa', 'old:a', 'import', 'user', '2025-01-01T00:00:00.000+00:00', '2025-01-01T00:00:00.000+00:00');
  INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('sb', 'old:b', 'import', 'user', '2025-01-01T00:00:00.000+00:00', '2025-01-01T00:00:00.000+00:00');
  INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "content", "timestamp", "contentHash") VALUES ('ea', 'sa', 'import', 'user', 'secret of A', '2025-01-01T00:00:00.000+00:00', 'h1');
  INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "content", "timestamp", "contentHash") VALUES ('eb', 'sb', 'import', 'user', 'B speaks', '2025-01-01T00:00:00.000+00:00', 'h2');
  INSERT INTO "Entity" ("id", "scopeId", "key", "name", "updatedAt") VALUES ('nb', 'sb', 'ana', 'Ana', '2025-01-01T00:00:00.000+00:00');
  INSERT INTO "EntityObservation" ("id", "scopeId", "entityId", "episodeId", "content") VALUES ('o-cross', 'sb', 'nb', 'ea', 'cites A');
  INSERT INTO "EntityObservation" ("id", "scopeId", "entityId", "episodeId", "content") VALUES ('o-gone', 'sb', 'nb', 'e-deleted', 'cites nothing');
  INSERT INTO "EntityObservation" ("id", "scopeId", "entityId", "episodeId", "content") VALUES ('o-own', 'sb', 'nb', 'eb', 'cites B');
`;

describe('hostile input, round three: references carry the scope (chaos)', () => {
  const logs = memoryLogger();
  const started = performance.now();
  const dataDir = tempDir('nocturne-chaos-scope-refs-');
  let service: RunningService;
  let apiBase: string;
  const figures: Record<string, unknown> = {};

  const importDoc = async (scopeId: string, doc: unknown) => {
    const response = await fetch(`${apiBase}/scopes/${scopeId}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(doc),
    });
    return { status: response.status, text: await response.text() };
  };

  beforeAll(async () => {
    const apiPort = await freePort();
    const config = loadConfig({
      env: { DATA_DIR: dataDir, TZ: 'UTC', ADMIN_TOKEN, API_PORT: String(apiPort), TERMINAL: 'off', SLEEP_ENABLED: 'false', LOG_FORMAT: 'json' },
      envFile: false,
    });
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
    apiBase = `http://127.0.0.1:${apiPort}`;
    const a = await importDoc(SCOPE_A, exportOf(SCOPE_A, 'import:a', [exportEpisode(0, { id: EPISODE_A, content: 'what only A said', externalId: null })]));
    expect(a.status).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`scope-references: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it('an import whose observation cites another scope\u2019s episode is refused with a 400, nothing written', async () => {
    const prisma = service.core.db.prisma;
    const answer = await importDoc(
      SCOPE_B,
      exportOf(SCOPE_B, 'import:b', [exportEpisode(1, { id: `${SCOPE_B}-e1`, externalId: null })], [entityCiting(SCOPE_B, EPISODE_A)]),
    );
    const linked = await prisma.entityObservation.count({ where: { episodeId: EPISODE_A } });
    figures.crossScopeImport = { status: answer.status, observationsLinkedToA: linked };
    expect(answer.status).toBe(400);
    expect(answer.text).toContain(`entities[0].observations[0].episodeId: no episode ${EPISODE_A} in the document`);
    expect(linked).toBe(0);
    expect(await service.core.scopes.findByKey('import:b')).toBeNull();
  }, 60_000);

  it('an import with an episode dated 9999 or 1969 is refused with a 400, nothing written', async () => {
    const results: Record<string, number> = {};
    const texts: string[] = [];
    const stored: string[] = [];
    for (const [i, [name, fields]] of (
      [
        ['year9999', { timestamp: '9999-12-31T23:59:59.000Z' }],
        ['createdAt9999', { createdAt: '9999-01-01T00:00:00.000Z' }],
        ['year1969', { timestamp: '1969-07-20T20:17:00.000Z' }],
      ] as const
    ).entries()) {
      const id = `${SCOPE_B.slice(0, -2)}d${i}`;
      const answer = await importDoc(id, exportOf(id, `import:${name}`, [exportEpisode(2, { id: `${id}-e`, externalId: null, ...fields })]));
      results[name] = answer.status;
      texts.push(answer.text);
      if (await service.core.scopes.findByKey(`import:${name}`)) stored.push(name);
    }
    figures.datesImport = { ...results, stored };
    expect(results).toEqual({ year9999: 400, createdAt9999: 400, year1969: 400 });
    for (const text of texts) expect(text).toMatch(/episodes\[0\]\.(timestamp|createdAt): timestamp .* (is in the future|is before 1970)/);
    expect(stored).toEqual([]);
  }, 60_000);

  it('an import with an episode of only zero-width and control characters is refused with a 400', async () => {
    const id = `${SCOPE_B.slice(0, -2)}zw`;
    const answer = await importDoc(
      id,
      exportOf(id, 'import:zw', [exportEpisode(3, { id: `${id}-e`, externalId: null, content: '\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e \u3164' })]),
    );
    figures.invisibleImport = answer.status;
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('episodes[0].content: content is empty');
    expect(await service.core.scopes.findByKey('import:zw')).toBeNull();
  }, 60_000);

  it('the SQLite database refuses an observation linked to another scope\u2019s episode', async () => {
    const prisma = service.core.db.prisma;
    const id = `${SCOPE_B.slice(0, -2)}ok`;
    expect(
      (await importDoc(id, exportOf(id, 'import:ok', [exportEpisode(4, { id: `${id}-e`, externalId: null })], [entityCiting(id, `${id}-e`)]))).status,
    ).toBe(201);
    const write = prisma.entityObservation.create({ data: { scopeId: id, entityId: `${id}-ent`, episodeId: EPISODE_A, content: 'smuggled' } });
    await expect(write).rejects.toThrow(/foreign key/i);
    expect(await prisma.entityObservation.count({ where: { episodeId: EPISODE_A } })).toBe(0);
  }, 60_000);

  it('a SQLite store written before the key: the next start drops the cross-scope link and audits it', async () => {
    const dir = tempDir('nocturne-chaos-scope-refs-old-');
    try {
      const file = path.join(dir, 'nocturne.db');
      await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir: prismaDirBefore() });
      const seed = new Database(file);
      seed.exec(SEED_SQL);
      seed.close();
      await runCliToEnd(['scopes'], cleanEnv({ DATA_DIR: dir, LOG_LEVEL: 'warn', TERMINAL: 'off', SLEEP_ENABLED: 'false' }));
      const db = new Database(file, { readonly: true });
      try {
        const observations = db.prepare('SELECT "id", "episodeId" FROM "EntityObservation" ORDER BY "id"').all();
        const audits = db
          .prepare('SELECT "scopeId", "action", "subjectType", "subjectId", "before", "createdAt" FROM "AuditEvent" ORDER BY "subjectId"')
          .all() as Array<Record<string, string>>;
        figures.sqliteMigration = { observations, audits: audits.map((a) => `${a.scopeId}/${a.subjectId}/${a.before}`) };
        expect(observations).toEqual([
          { id: 'o-cross', episodeId: null },
          { id: 'o-gone', episodeId: null },
          { id: 'o-own', episodeId: 'eb' },
        ]);
        expect(audits.map((a) => [a.scopeId, a.action, a.subjectType, a.subjectId, JSON.parse(a.before!)])).toEqual([
          ['sb', 'repair', 'entityObservation', 'o-cross', { episodeId: 'ea' }],
          ['sb', 'repair', 'entityObservation', 'o-gone', { episodeId: 'e-deleted' }],
        ]);
        expect(Number.isNaN(new Date(audits[0]!.createdAt!).getTime())).toBe(false);
      } finally {
        db.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  const pgIt = postgresAvailable() ? it : it.skip;
  if (!postgresAvailable()) it(`PostgreSQL skipped: ${postgresSkipReason()}`, () => undefined);
  pgIt(
    'a PostgreSQL store written before the key: the migration drops and audits the link, then the key refuses a new one',
    async () => {
      const url = await createPostgresDatabase();
      await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url), prismaDir: prismaDirBefore() });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(SEED_SQL.replaceAll('+00:00', 'Z'));
        await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url) });
        const observations = (await client.query('SELECT "id", "episodeId" FROM "EntityObservation" ORDER BY "id"')).rows;
        const audits = (await client.query('SELECT "scopeId", "subjectId", "before" FROM "AuditEvent" WHERE "action" = \'repair\' ORDER BY "subjectId"')).rows;
        figures.postgresMigration = { observations, audits };
        expect(observations).toEqual([
          { id: 'o-cross', episodeId: null },
          { id: 'o-gone', episodeId: null },
          { id: 'o-own', episodeId: 'eb' },
        ]);
        expect(audits).toEqual([
          { scopeId: 'sb', subjectId: 'o-cross', before: { episodeId: 'ea' } },
          { scopeId: 'sb', subjectId: 'o-gone', before: { episodeId: 'e-deleted' } },
        ]);
        await expect(
          client.query(`INSERT INTO "EntityObservation" ("id", "scopeId", "entityId", "episodeId", "content") VALUES ('o-new', 'sb', 'nb', 'ea', 'smuggled')`),
        ).rejects.toThrow(/foreign key/i);
      } finally {
        await client.end();
      }
    },
    120_000,
  );
});
