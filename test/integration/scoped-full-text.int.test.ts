/**
 * Issue 18: the full-text index kept per scope. On SQLite a scope's rows are one rowid range
 * (search_scope numbers the scopes), on PostgreSQL its lexemes carry a tag of the scope and kind;
 * either way a search reads only the scope's part of the index. Checked here against real
 * databases:
 * - the migration rebuilds an existing index into that shape, and search answers on the upgraded
 *   database exactly as on a new database holding the same rows;
 * - rows written later keep the numbering, a deleted scope's number goes with it, and a scope
 *   made again under the same id finds only its new rows;
 * - the term frequencies counted in JavaScript are FTS5's: the tokenizer replica gives FTS5's
 *   own terms word by word.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import pg from 'pg';
import { applyPendingMigrations, DEFAULT_PRISMA_DIR, readMigrations } from '../../src/storage/migrations/migration-runner';
import { createFullTextIndex, type SearchKind } from '../../src/storage/full-text';
import { ftsTokens, ftsWords, stemCount } from '../../src/storage/fts-tokens';
import { seededRandom } from '../../src/shared/seeded-random';
import { createSqliteClient, createSqliteMigrationAdapter } from '../../src/storage/sqlite-driver';
import { createPostgresClient, createPostgresMigrationAdapter } from '../../src/storage/postgres-driver';
import { createPostgresDatabase, postgresAvailable, tempDir } from '../support/databases';
import { createStoreStats } from '../../src/memory/store-stats';

const MIGRATION = '20261126070000_scoped_full_text';
const LOCOMO = path.resolve(__dirname, '../../../shared/datasets/locomo/locomo-dev.json');

/**
 * A copy of prisma/ as it was before the scoped migration (it and every later migration set
 * aside), the migrations set aside, and a function that puts them back.
 */
function prismaBefore(provider: 'sqlite' | 'postgres'): { dir: string; later: string[]; restore(): void } {
  const dir = path.join(tempDir(), 'prisma');
  fs.cpSync(DEFAULT_PRISMA_DIR, dir, { recursive: true, verbatimSymlinks: true });
  const migrations = path.join(dir, provider, 'migrations');
  const later = readMigrations(provider, dir)
    .migrationDirectories.map((m) => m.path)
    .filter((name) => name >= MIGRATION);
  const asideDir = path.join(tempDir(), `aside-${provider}`);
  fs.mkdirSync(asideDir);
  for (const name of later) fs.renameSync(path.join(migrations, name), path.join(asideDir, name));
  return { dir, later, restore: () => later.forEach((name) => fs.renameSync(path.join(asideDir, name), path.join(migrations, name))) };
}

const TEXTS = [
  'I painted a sunset over the lake, painting is my way to relax',
  'We adopted a puppy named Biscuit last spring',
  'The painting class meets on Tuesdays; painters paint painted paintings',
  'Caroline went hiking with her kids near the lake',
  'My café serves crème brûlée on Sundays',
  'Running a marathon was harder than painting',
];
const MEMORIES = ['Owns a dog called Biscuit', 'Paints landscapes at the lake', 'Likes crème brûlée'];
const QUERIES = ['painting lake', 'puppy Biscuit', 'creme brulee cafe', 'hiking kids', 'dog', 'landscapes', 'marathon painting sunset'];

/** Plain SQL rows for two scopes (the same on both databases). */
function rowsSql(ts: (ms: number) => string): string {
  const lines: string[] = [];
  for (const scope of ['sa', 'sb']) {
    lines.push(
      `INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('${scope}', 'k-${scope}', 't', 'user', ${ts(0)}, ${ts(0)});`,
    );
    TEXTS.forEach((text, i) => {
      const content = scope === 'sb' ? `${text} again` : text;
      lines.push(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") ` +
          `VALUES ('${scope}-e${i}', '${scope}', 't', 'user', 'Ana', '${content.replace(/'/g, "''")}', ${ts(i)}, 'h${i}', ${ts(i)});`,
      );
    });
    MEMORIES.forEach((text, i) => {
      lines.push(
        `INSERT INTO "Memory" ("id", "scopeId", "category", "content", "confidence", "updatedAt") VALUES ('${scope}-m${i}', '${scope}', 'fact', '${text.replace(/'/g, "''")}', 0.8, ${ts(i)});`,
      );
    });
  }
  return lines.join('\n');
}

type Searchable = Parameters<typeof createFullTextIndex>[0];

async function answers(prisma: Searchable, provider: 'sqlite' | 'postgres'): Promise<unknown[]> {
  const index = createFullTextIndex(prisma, provider);
  const out: unknown[] = [];
  for (const scopeId of ['sa', 'sb']) {
    for (const kind of ['episode', 'memory'] as SearchKind[]) {
      for (const query of QUERIES) out.push({ scopeId, kind, query, hits: await index.search({ scopeId, kind, query, limit: 10 }) });
    }
  }
  return out;
}

describe('scoped full text on SQLite', () => {
  it('rebuilds an existing index per scope, and searches answer as on a new database', async () => {
    const before = prismaBefore('sqlite');
    const file = path.join(tempDir(), 'old.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir: before.dir });
    const old = new Database(file);
    old.exec(rowsSql(String));
    expect(old.prepare(`SELECT name FROM sqlite_master WHERE name = 'search_scope'`).all()).toEqual([]);
    old.close();
    before.restore();
    expect(await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }), prismaDir: before.dir })).toEqual(
      before.later,
    );

    const fresh = path.join(tempDir(), 'new.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file: fresh }) });
    const db = new Database(fresh);
    db.exec(rowsSql(String));
    db.close();

    const upgraded = await createSqliteClient({ file });
    const created = await createSqliteClient({ file: fresh });
    try {
      const a = await answers(upgraded, 'sqlite');
      expect(a).toEqual(await answers(created, 'sqlite'));
      const hits = a as Array<{ scopeId: string; kind: string; query: string; hits: Array<{ id: string; score: number }> }>;
      // Each scope finds its own rows only, with positive scores, the best first.
      for (const q of hits) {
        for (const hit of q.hits) expect(hit.id.startsWith(`${q.scopeId}-${q.kind === 'episode' ? 'e' : 'm'}`)).toBe(true);
        expect(q.hits.every((h, i) => h.score > 0 && (i === 0 || q.hits[i - 1]!.score >= h.score))).toBe(true);
      }
      expect(hits.find((q) => q.scopeId === 'sa' && q.kind === 'episode' && q.query === 'painting lake')!.hits.map((h) => h.id)).toEqual(
        expect.arrayContaining(['sa-e0', 'sa-e2', 'sa-e3', 'sa-e5']),
      );
      expect(hits.find((q) => q.scopeId === 'sb' && q.kind === 'episode' && q.query === 'painting lake')!.hits.length).toBe(4);
    } finally {
      await upgraded.$disconnect();
      await created.$disconnect();
    }

    const check = new Database(file);
    try {
      const scopes = check.prepare(`SELECT "no", "scope_id" AS scopeId, "episodes", "memories" FROM "search_scope" ORDER BY "no"`).all() as Array<{
        no: number;
        scopeId: string;
        episodes: number;
        memories: number;
      }>;
      expect(scopes.map((s) => [s.scopeId, s.episodes, s.memories])).toEqual([
        ['sa', 6, 3],
        ['sb', 6, 3],
      ]);
      const docs = check.prepare(`SELECT "rowid" AS rowid, "kind", "ref_id" AS refId, "scope_id" AS scopeId FROM "search_doc"`).all() as Array<{
        rowid: number;
        kind: string;
        refId: string;
        scopeId: string;
      }>;
      expect(docs).toHaveLength(18);
      for (const doc of docs) {
        const no = scopes.find((s) => s.scopeId === doc.scopeId)!.no;
        const base = no * 2 ** 32 + (doc.kind === 'memory' ? 2 ** 31 : 0);
        expect(doc.rowid).toBeGreaterThan(base);
        expect(doc.rowid).toBeLessThanOrEqual(base + 6);
      }
      // Later rows continue the scope's numbering.
      check.exec(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "content", "timestamp", "contentHash", "createdAt") VALUES ('sa-e6', 'sa', 't', 'user', 'a new oboe', 9, 'h9', 9)`,
      );
      const sa = scopes.find((s) => s.scopeId === 'sa')!.no;
      expect(check.prepare(`SELECT "rowid" AS rowid FROM "search_doc" WHERE "ref_id" = 'sa-e6'`).get()).toEqual({ rowid: sa * 2 ** 32 + 7 });
      expect(check.prepare(`SELECT "rowid" AS rowid FROM "search_fts" WHERE "search_fts" MATCH 'oboe'`).all()).toEqual([{ rowid: sa * 2 ** 32 + 7 }]);
    } finally {
      check.close();
    }
  });

  it("drops a deleted scope's number; the same id made again starts a new range and finds only its new rows", async () => {
    const file = path.join(tempDir(), 'scopes.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }) });
    const prisma = await createSqliteClient({ file });
    try {
      const index = createFullTextIndex(prisma, 'sqlite');
      const scope = await prisma.scope.create({ data: { id: 'again', key: 'k-again', channel: 't' } });
      const episode = (content: string, id: string) =>
        prisma.episode.create({ data: { id, scopeId: scope.id, channel: 't', role: 'user', content, timestamp: new Date(), contentHash: id } });
      await episode('the harbor at dawn', 'old-1');
      expect((await index.search({ scopeId: 'again', kind: 'episode', query: 'harbor', limit: 5 })).map((h) => h.id)).toEqual(['old-1']);
      const [first] = await prisma.$queryRawUnsafe<Array<{ no: bigint | number }>>(`SELECT "no" FROM "search_scope" WHERE "scope_id" = 'again'`);
      await prisma.scope.delete({ where: { id: 'again' } });
      expect(await prisma.$queryRawUnsafe(`SELECT * FROM "search_scope" WHERE "scope_id" = 'again'`)).toEqual([]);
      expect(await index.search({ scopeId: 'again', kind: 'episode', query: 'harbor', limit: 5 })).toEqual([]);

      await prisma.scope.create({ data: { id: 'again', key: 'k-again', channel: 't' } });
      await episode('a harbor seal', 'new-1');
      const [second] = await prisma.$queryRawUnsafe<Array<{ no: bigint | number }>>(`SELECT "no" FROM "search_scope" WHERE "scope_id" = 'again'`);
      expect(Number(second!.no)).toBeGreaterThan(Number(first!.no));
      expect((await index.search({ scopeId: 'again', kind: 'episode', query: 'harbor', limit: 5 })).map((h) => h.id)).toEqual(['new-1']);
      expect(await index.countDocuments('again', 'episode')).toBe(1);
    } finally {
      await prisma.$disconnect();
    }
  });

  it("refuses a row past a scope's range with a clear error, and stores nothing of it", async () => {
    const file = path.join(tempDir(), 'full.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }) });
    const db = new Database(file);
    try {
      db.exec(`INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('full', 'k', 't', 'user', 0, 0);
        INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "content", "timestamp", "contentHash", "createdAt") VALUES ('e1', 'full', 't', 'user', 'first', 0, 'h', 0);
        UPDATE "search_scope" SET "episodes" = 2147483647 WHERE "scope_id" = 'full';`);
      expect(() =>
        db.exec(
          `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "content", "timestamp", "contentHash", "createdAt") VALUES ('e2', 'full', 't', 'user', 'second', 0, 'h', 0)`,
        ),
      ).toThrow('full-text index: a scope holds at most 2147483647 episodes');
      expect(db.prepare(`SELECT COUNT(*) AS n FROM "Episode"`).get()).toEqual({ n: 1 });
      expect(db.prepare(`SELECT COUNT(*) AS n FROM "search_doc"`).get()).toEqual({ n: 1 });
      // A memory has a range of its own.
      db.exec(`INSERT INTO "Memory" ("id", "scopeId", "category", "content", "confidence", "updatedAt") VALUES ('m1', 'full', 'fact', 'still fine', 0.8, 0)`);
      expect(db.prepare(`SELECT COUNT(*) AS n FROM "search_fts" WHERE "search_fts" MATCH 'fine'`).get()).toEqual({ n: 1 });
    } finally {
      db.close();
    }
  });

  it("keeps each scope's row count and token total equal to what FTS5 holds, through inserts, edits and deletes", () => {
    const file = path.join(tempDir(), 'stats.db');
    return applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }) }).then(() => {
      const db = new Database(file);
      try {
        const next = seededRandom(7);
        const rand = (n: number) => Math.floor(next() * n);
        // Lengths of 0 to 20,000 tokens: one-, two- and three-byte varints in the docsize record.
        let made = 0;
        const text = () => Array.from({ length: [0, 3, 40, 130, 900, 20_000][made++ % 6]! }, (_, i) => `w${(i * 7 + rand(50)) % 300}`).join(' ');
        db.exec(
          `INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('s1', 'k1', 't', 'user', 0, 0), ('s2', 'k2', 't', 'user', 0, 0)`,
        );
        const live: Array<{ table: 'Episode' | 'Memory'; id: string }> = [];
        for (let i = 0; i < 120; i++) {
          const scope = rand(2) ? 's1' : 's2';
          const op = live.length === 0 ? 0 : rand(4);
          if (op <= 1) {
            const id = `r${i}`;
            if (rand(2)) {
              db.prepare(
                `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") VALUES (?, ?, 't', 'user', ?, ?, 0, 'h', 0)`,
              ).run(id, scope, rand(2) ? 'Ana' : null, text());
              live.push({ table: 'Episode', id });
            } else {
              db.prepare(`INSERT INTO "Memory" ("id", "scopeId", "category", "content", "confidence", "updatedAt") VALUES (?, ?, 'fact', ?, 0.8, 0)`).run(
                id,
                scope,
                text(),
              );
              live.push({ table: 'Memory', id });
            }
          } else {
            const [row] = live.splice(rand(live.length), 1);
            if (op === 2) {
              db.prepare(`UPDATE "${row!.table}" SET "content" = ? WHERE "id" = ?`).run(text(), row!.id);
              live.push(row!);
            } else {
              db.prepare(`DELETE FROM "${row!.table}" WHERE "id" = ?`).run(row!.id);
            }
          }
        }
        const varint = (bytes: Buffer) => {
          let value = 0;
          for (const byte of bytes) {
            value = value * 128 + (byte & 0x7f);
            if ((byte & 0x80) === 0) break;
          }
          return value;
        };
        let longest = 0;
        const kept = db
          .prepare(
            `SELECT "scope_id" AS scope, "episode_rows" AS er, "episode_tokens" AS et, "memory_rows" AS mr, "memory_tokens" AS mt FROM "search_scope" ORDER BY "scope_id"`,
          )
          .all();
        const actual = ['s1', 's2'].map((scope) => {
          const sizes = (kind: string) =>
            (
              db
                .prepare(`SELECT z."sz" AS sz FROM "search_doc" d JOIN "search_fts_docsize" z ON z."id" = d."rowid" WHERE d."scope_id" = ? AND d."kind" = ?`)
                .all(scope, kind) as Array<{ sz: Buffer }>
            ).map((r) => varint(r.sz));
          const [e, m] = [sizes('episode'), sizes('memory')];
          longest = Math.max(longest, ...e, ...m);
          return { scope, er: e.length, et: e.reduce((a, b) => a + b, 0), mr: m.length, mt: m.reduce((a, b) => a + b, 0) };
        });
        expect(longest).toBeGreaterThan(16_383);
        expect(kept).toEqual(actual);
        expect(actual.map((a) => a.er + a.mr).reduce((a, b) => a + b)).toBe(live.length);
      } finally {
        db.close();
      }
    });
  });

  it("scores BM25 by hand from the scope's rows, short rows and rows of thousands of words alike", async () => {
    const file = path.join(tempDir(), 'bm25.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }) });
    const db = new Database(file);
    // Lengths of 1, 2 and 3 bytes in FTS5's docsize record; "paint" 0-3 times in each.
    const rows = [
      { words: 4, paint: 1 },
      { words: 9, paint: 0 },
      { words: 127, paint: 2 },
      { words: 128, paint: 1 },
      { words: 300, paint: 3 },
      { words: 16_383, paint: 1 },
      { words: 16_384, paint: 2 },
      { words: 40_000, paint: 1 },
      ...Array.from({ length: 12 }, (_, i) => ({ words: 5 + i, paint: 0 })),
    ];
    try {
      db.exec(`INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('s', 'k', 't', 'user', 0, 0)`);
      const insert = db.prepare(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") VALUES (?, 's', 't', 'user', NULL, ?, 0, 'h', 0)`,
      );
      rows.forEach((r, i) =>
        insert.run(
          `e${i}`,
          [...Array.from({ length: r.words - r.paint }, (_, j) => `w${j % 50}`), ...Array.from({ length: r.paint }, () => 'painting')].join(' '),
        ),
      );
    } finally {
      db.close();
    }
    const prisma = await createSqliteClient({ file });
    try {
      const hits = await createFullTextIndex(prisma, 'sqlite').search({ scopeId: 's', kind: 'episode', query: 'paint', limit: 50 });
      const mean = rows.reduce((n, r) => n + r.words, 0) / rows.length;
      const holding = rows.filter((r) => r.paint > 0).length;
      const idf = Math.log((rows.length - holding + 0.5) / (holding + 0.5));
      const expected = rows
        .map((r, i) => ({ id: `e${i}`, score: (idf * r.paint * 2.2) / (r.paint + 1.2 * (0.25 + (0.75 * r.words) / mean)) }))
        .filter((h) => h.score > 0)
        .sort((a, b) => b.score - a.score);
      expect(hits.map((h) => h.id)).toEqual(expected.map((h) => h.id));
      hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(expected[i]!.score, 9));
    } finally {
      await prisma.$disconnect();
    }
  });

  it('leaves out a common word without counting all its rows, and scores a query of common words alone by their whole counts', async () => {
    const file = path.join(tempDir(), 'common.db');
    await applyPendingMigrations({ provider: 'sqlite', adapterFactory: createSqliteMigrationAdapter({ file }) });
    const db = new Database(file);
    // 6,000 rows: "melanie" in 2,400 (common: above 2,000 rows), "paint" in 2,200, "lake" in 4.
    const total = 6_000;
    try {
      db.exec(`INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('s', 'k', 't', 'user', 0, 0)`);
      const insert = db.prepare(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") VALUES (?, 's', 't', 'user', NULL, ?, 0, 'h', 0)`,
      );
      db.transaction(() => {
        for (let i = 0; i < total; i++)
          insert.run(`e${i}`, [i < 2_400 ? 'melanie' : 'ana', i >= 400 && i < 2_600 ? 'paints' : 'sings', i < 4 ? 'lake' : 'sea', 'today'].join(' '));
      })();
    } finally {
      db.close();
    }
    const prisma = await createSqliteClient({ file });
    try {
      const index = createFullTextIndex(prisma, 'sqlite');
      const rare = await index.searchTerms({ scopeId: 's', kind: 'episode', query: 'melanie lake', limit: 10 });
      expect(rare.terms).toEqual(['lake']);
      expect(rare.hits.map((h) => h.id).sort()).toEqual(['e0', 'e1', 'e2', 'e3']);
      // Both words common: the rarer is kept, scored with its whole count (2,200 rows, not the cap).
      const common = await index.search({ scopeId: 's', kind: 'episode', query: 'melanie paint', limit: 5 });
      const idf = Math.log((total - 2_200 + 0.5) / (2_200 + 0.5));
      expect(common).toHaveLength(5);
      expect(idf).toBeGreaterThan(0.5);
      for (const hit of common) expect(hit.score).toBeCloseTo((idf * 2.2) / (1 + 1.2), 9);
    } finally {
      await prisma.$disconnect();
    }
  });

  it("counts words as FTS5's tokenizer makes them, word by word", () => {
    const words = new Set<string>([
      'running',
      'painted',
      'Café',
      'crème',
      'BRÛLÉE',
      'naïve',
      'x',
      'ab',
      'Ωmega',
      '東京',
      '12th',
      `${'x'.repeat(70)}ing`,
      'generalizations',
      'happily',
      'skies',
    ]);
    if (fs.existsSync(LOCOMO)) for (const w of fs.readFileSync(LOCOMO, 'utf8').match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
    const list = [...words];
    const db = new Database(':memory:');
    try {
      db.exec(
        `CREATE VIRTUAL TABLE f USING fts5(c, tokenize = 'porter unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance');`,
      );
      const insert = db.prepare('INSERT INTO f (rowid, c) VALUES (?, ?)');
      db.transaction(() => list.forEach((word, i) => insert.run(i + 1, word)))();
      const fts = new Map<number, string[]>();
      for (const row of db.prepare('SELECT "doc", "term" FROM v ORDER BY "doc", "offset"').all() as Array<{ doc: number; term: string }>) {
        fts.set(row.doc, [...(fts.get(row.doc) ?? []), row.term]);
      }
      const differ = list.filter((word, i) => JSON.stringify(fts.get(i + 1) ?? []) !== JSON.stringify(ftsTokens(word)));
      expect(list.length).toBeGreaterThan(fs.existsSync(LOCOMO) ? 5_000 : 10);
      expect(differ).toEqual([]);
      // Counting a stem only among the words sharing its first letter relies on stemming never
      // changing a word's first letter.
      expect(list.filter((word) => ftsTokens(word).some((stem, i) => stem[0] !== ftsWords(word)[i]![0]))).toEqual([]);
    } finally {
      db.close();
    }
  });

  it("counts each word of every turn as often as FTS5 holds it, from the turn's text", () => {
    const texts = fs.existsSync(LOCOMO)
      ? (fs.readFileSync(LOCOMO, 'utf8').match(/"text": "((?:[^"\\]|\\.)*)"/g) ?? []).map((t) => JSON.parse(t.slice(8)) as string)
      : [...TEXTS];
    // Words FTS5 treats unusually, added to a copy (TEXTS is the rows every other test inserts).
    texts.push('Ana: painters paint painted paintings; PAINT!', 'x', '', 'naïve café crème, naive cafe creme', `東京 12th ${'y'.repeat(300)}`);
    const db = new Database(':memory:');
    try {
      db.exec(
        `CREATE VIRTUAL TABLE f USING fts5(c, tokenize = 'porter unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance');`,
      );
      const insert = db.prepare('INSERT INTO f (rowid, c) VALUES (?, ?)');
      db.transaction(() => texts.forEach((text, i) => insert.run(i + 1, text)))();
      const counts = new Map<string, number>();
      for (const row of db.prepare('SELECT "doc", "term", COUNT(*) AS n FROM v GROUP BY "doc", "term"').all() as Array<{
        doc: number;
        term: string;
        n: number;
      }>)
        counts.set(`${row.doc} ${row.term}`, row.n);
      const wrong: string[] = [];
      texts.forEach((text, i) => {
        const words = ftsWords(text);
        for (const stem of new Set(ftsTokens(text))) {
          if (stemCount(words, stem) !== counts.get(`${i + 1} ${stem}`)) wrong.push(`"${stem}" in ${JSON.stringify(text)}`);
        }
      });
      expect(texts.length).toBeGreaterThan(fs.existsSync(LOCOMO) ? 2_000 : 5);
      expect(wrong).toEqual([]);
    } finally {
      db.close();
    }
  });
});

const pgDescribe = postgresAvailable() ? describe : describe.skip;

pgDescribe('scoped full text on PostgreSQL', () => {
  it("re-indexes existing rows with their scope's lexemes, and searches answer as on a new database", async () => {
    const before = prismaBefore('postgres');
    const url = await createPostgresDatabase();
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url), prismaDir: before.dir });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(rowsSql((ms) => `to_timestamp(${ms})`));
      before.restore();
      expect(await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url), prismaDir: before.dir })).toEqual(
        before.later,
      );
      // Every lexeme carries its row's scope and kind; a plain lexeme finds nothing.
      const tsv = await client.query(`SELECT "scope_id", "kind", "tsv"::text AS tsv FROM "search_doc" WHERE "ref_id" = 'sa-e1'`);
      expect(tsv.rows[0].tsv).toMatch(/^'[0-9a-f]{8}:adopt':\d/);
      const tags = await client.query(`SELECT DISTINCT "nocturne_search_tag"("scope_id", "kind") AS tag FROM "search_doc"`);
      expect(tags.rowCount).toBe(4);
      expect((await client.query(`SELECT COUNT(*)::int AS n FROM "search_doc" WHERE "tsv" @@ to_tsquery('english', 'puppy')`)).rows[0].n).toBe(0);
      // No GIN pending list, which every search would read whole whoever filled it.
      const options = await client.query(`SELECT reloptions FROM pg_class WHERE relname = 'search_doc_tsv'`);
      expect(options.rows[0].reloptions).toEqual(['fastupdate=off']);
    } finally {
      await client.end();
    }

    const fresh = await createPostgresDatabase();
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(fresh) });
    const freshClient = new pg.Client({ connectionString: fresh });
    await freshClient.connect();
    await freshClient.query(rowsSql((ms) => `to_timestamp(${ms})`));
    await freshClient.end();

    const upgraded = await createPostgresClient(url);
    const created = await createPostgresClient(fresh);
    try {
      const a = (await answers(upgraded, 'postgres')) as Array<{ scopeId: string; kind: string; query: string; hits: Array<{ id: string; score: number }> }>;
      expect(a).toEqual(await answers(created, 'postgres'));
      for (const q of a) for (const hit of q.hits) expect(hit.id.startsWith(`${q.scopeId}-${q.kind === 'episode' ? 'e' : 'm'}`)).toBe(true);
      expect(a.find((q) => q.scopeId === 'sa' && q.kind === 'memory' && q.query === 'dog')!.hits.map((h) => h.id)).toEqual(['sa-m0']);
      expect(a.find((q) => q.scopeId === 'sb' && q.kind === 'episode' && q.query === 'puppy Biscuit')!.hits.map((h) => h.id)).toEqual(['sb-e1']);
      // Accents are folded, as on SQLite: "creme brulee" finds "crème brûlée", in rows and memories.
      expect(a.find((q) => q.scopeId === 'sa' && q.kind === 'episode' && q.query === 'creme brulee cafe')!.hits.map((h) => h.id)).toEqual(['sa-e4']);
      expect(a.find((q) => q.scopeId === 'sa' && q.kind === 'memory' && q.query === 'creme brulee cafe')!.hits.map((h) => h.id)).toEqual(['sa-m2']);
    } finally {
      await upgraded.$disconnect();
      await created.$disconnect();
    }
  });
  /** Occurrences of each lexeme of a tsvector as PostgreSQL prints it ('tag:word':1,5 'tag:x' ...), counted here. */
  function lexemeCounts(tsv: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of tsv.matchAll(/'((?:[^']|'')*)'(?::([\d,A-D]+))?/g)) out.set(m[1]!.replace(/''/g, "'"), m[2] ? m[2].split(',').length : 1);
    return out;
  }

  it("keeps each scope's row count and length total equal to a recount, through inserts, edits, deletes and a scope's deletion", async () => {
    const url = await createPostgresDatabase();
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url) });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const next = seededRandom(11);
      const rand = (n: number) => Math.floor(next() * n);
      const words = ['paint', 'painting', 'lake', 'the', 'and', 'hike', 'crème', "o'neil", 'dog', 'w1', 'w2', 'w3'];
      const text = () => Array.from({ length: [0, 1, 5, 40, 300][rand(5)]! }, () => words[rand(words.length)]).join(' ');
      await client.query(
        `INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('s1', 'k1', 't', 'user', now(), now()), ('s2', 'k2', 't', 'user', now(), now()), ('s3', 'k3', 't', 'user', now(), now())`,
      );
      const live: Array<{ table: 'Episode' | 'Memory'; id: string }> = [];
      for (let i = 0; i < 150; i++) {
        const scope = ['s1', 's2', 's3'][rand(3)]!;
        const op = live.length === 0 ? 0 : rand(4);
        if (op <= 1) {
          const id = `r${i}`;
          if (rand(2)) {
            await client.query(
              `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") VALUES ($1, $2, 't', 'user', $3, $4, now(), 'h', now())`,
              [id, scope, rand(2) ? 'Ana' : null, text()],
            );
            live.push({ table: 'Episode', id });
          } else {
            await client.query(
              `INSERT INTO "Memory" ("id", "scopeId", "category", "content", "confidence", "updatedAt") VALUES ($1, $2, 'fact', $3, 0.8, now())`,
              [id, scope, text()],
            );
            live.push({ table: 'Memory', id });
          }
        } else {
          const [row] = live.splice(rand(live.length), 1);
          if (op === 2) {
            await client.query(`UPDATE "${row!.table}" SET "content" = $1 WHERE "id" = $2`, [text(), row!.id]);
            live.push(row!);
          } else {
            await client.query(`DELETE FROM "${row!.table}" WHERE "id" = $1`, [row!.id]);
          }
        }
      }
      await client.query(`DELETE FROM "Scope" WHERE "id" = 's3'`);
      const recount = async () => {
        const docs = await client.query(`SELECT "scope_id" AS scope, "kind", "tsv"::text AS tsv FROM "search_doc"`);
        const out = new Map<string, { scope: string; er: number; et: number; mr: number; mt: number }>();
        for (const d of docs.rows as Array<{ scope: string; kind: string; tsv: string }>) {
          const entry = out.get(d.scope) ?? { scope: d.scope, er: 0, et: 0, mr: 0, mt: 0 };
          const length = [...lexemeCounts(d.tsv).values()].reduce((a, b) => a + b, 0);
          if (d.kind === 'episode') [entry.er, entry.et] = [entry.er + 1, entry.et + length];
          else [entry.mr, entry.mt] = [entry.mr + 1, entry.mt + length];
          out.set(d.scope, entry);
        }
        return [...out.values()].sort((a, b) => a.scope.localeCompare(b.scope));
      };
      const kept = await client.query(
        `SELECT "scope_id" AS scope, "episode_rows"::int AS er, "episode_tokens"::int AS et, "memory_rows"::int AS mr, "memory_tokens"::int AS mt FROM "search_scope" ORDER BY "scope_id"`,
      );
      const actual = await recount();
      expect(actual.map((a) => a.scope)).toEqual(['s1', 's2']);
      expect(kept.rows).toEqual(actual);
      expect(actual.some((a) => a.et > 100)).toBe(true);
    } finally {
      await client.end();
    }
  });

  it("scores a word by BM25 from the scope's own rows, whatever another scope holds", async () => {
    const url = await createPostgresDatabase();
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(url) });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const prisma = await createPostgresClient(url);
    try {
      await client.query(rowsSql((ms) => `to_timestamp(${ms})`));
      // Rows without the query's words, so that a word in three rows is informative (idf > 0).
      const filler = Array.from(
        { length: 14 },
        (_, i) => `('sa-f${i}', 'sa', 't', 'user', 'Ana', 'we talked about the weather for ${i + 1} minutes', now(), 'h', now())`,
      );
      await client.query(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") VALUES ${filler.join(', ')}`,
      );
      const index = createFullTextIndex(prisma, 'postgres');
      const query = 'painting lake';
      const before = await index.search({ scopeId: 'sa', kind: 'episode', query, limit: 10 });

      // BM25 by hand (k1 1.2, b 0.75, FTS5's idf), from the scope's rows as PostgreSQL indexed them.
      const docs = (await client.query(`SELECT "ref_id" AS id, "tsv"::text AS tsv FROM "search_doc" WHERE "scope_id" = 'sa' AND "kind" = 'episode'`))
        .rows as Array<{ id: string; tsv: string }>;
      const counted = docs.map((d) => ({ id: d.id, lexemes: new Map([...lexemeCounts(d.tsv)].map(([k, v]) => [k.slice(9), v])) }));
      const lengths = counted.map((d) => [...d.lexemes.values()].reduce((a, b) => a + b, 0));
      const mean = lengths.reduce((a, b) => a + b, 0) / counted.length;
      const expected = new Map<string, number>();
      for (const lexeme of ['paint', 'lake']) {
        const holding = counted.filter((d) => d.lexemes.has(lexeme)).length;
        const idf = Math.max(1e-6, Math.log((counted.length - holding + 0.5) / (holding + 0.5)));
        counted.forEach((d, i) => {
          const tf = d.lexemes.get(lexeme);
          if (tf) expected.set(d.id, (expected.get(d.id) ?? 0) + (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * lengths[i]!) / mean)));
        });
      }
      expect(before.map((h) => h.id).sort()).toEqual([...expected.keys()].sort());
      for (const hit of before) expect(hit.score).toBeCloseTo(expected.get(hit.id)!, 9);
      // The turn holding both words first; a turn holding "paint" four times above one holding it once.
      expect(before[0]!.id).toBe('sa-e0');
      expect(before.findIndex((h) => h.id === 'sa-e2')).toBeLessThan(before.findIndex((h) => h.id === 'sa-e5'));

      // Another scope fills up with the query's words: the first scope's answers do not move.
      const crowd = Array.from({ length: 300 }, (_, i) => `('sc-e${i}', 'sc', 't', 'user', 'Bo', 'painting by the lake ${i}', now(), 'h', now())`);
      await client.query(`INSERT INTO "Scope" ("id", "key", "channel", "kind", "createdAt", "updatedAt") VALUES ('sc', 'k-sc', 't', 'user', now(), now())`);
      await client.query(
        `INSERT INTO "Episode" ("id", "scopeId", "channel", "role", "author", "content", "timestamp", "contentHash", "createdAt") VALUES ${crowd.join(', ')}`,
      );
      expect(await index.search({ scopeId: 'sa', kind: 'episode', query, limit: 10 })).toEqual(before);
    } finally {
      await prisma.$disconnect();
      await client.end();
    }
  });
  it('migrates on a server where the unaccent extension cannot be created; words keep their accents, and the store says so', async () => {
    const url = new URL(await createPostgresDatabase());
    const database = url.pathname.slice(1);
    const role = `${database}_limited`;
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      // A role that owns nothing: it may create tables in the schema, not extensions in the database.
      await admin.query(`CREATE ROLE "${role}" LOGIN PASSWORD 'limited'`);
      await admin.query(`GRANT ALL ON SCHEMA public TO "${role}"`);
    } finally {
      await admin.end();
    }
    const limited = new URL(url.toString());
    [limited.username, limited.password] = [role, 'limited'];
    await applyPendingMigrations({ provider: 'postgres', adapterFactory: createPostgresMigrationAdapter(limited.toString()) });
    const client = new pg.Client({ connectionString: limited.toString() });
    await client.connect();
    const prisma = await createPostgresClient(limited.toString());
    try {
      expect((await client.query(`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'unaccent'`)).rows[0].n).toBe(0);
      await client.query(rowsSql((ms) => `to_timestamp(${ms})`));
      const index = createFullTextIndex(prisma, 'postgres');
      expect((await index.search({ scopeId: 'sa', kind: 'episode', query: 'crème brûlée', limit: 10 })).map((h) => h.id)).toEqual(['sa-e4']);
      expect(await index.search({ scopeId: 'sa', kind: 'episode', query: 'creme brulee', limit: 10 })).toEqual([]);
      expect(await createStoreStats(prisma, 'postgres').foldsAccents()).toBe(false);
    } finally {
      await prisma.$disconnect();
      await client.end();
    }
  });
});
