-- Full text numbered by scope (issue 18): a scope's index rows take one rowid range, so a search
-- reads only the scope's part of each posting list (prisma/sqlite/search-index.sql explains the
-- numbering). The index is rebuilt from Episode and Memory with the new keys.
DROP TRIGGER IF EXISTS "episode_search_insert_v2";
DROP TRIGGER IF EXISTS "episode_search_update_v2";
DROP TRIGGER IF EXISTS "episode_search_delete";
DROP TRIGGER IF EXISTS "memory_search_insert";
DROP TRIGGER IF EXISTS "memory_search_update";
DROP TRIGGER IF EXISTS "memory_search_delete";
DROP TABLE IF EXISTS "search_fts";
DROP TABLE IF EXISTS "search_doc";

CREATE TABLE "search_scope" (
    "no" INTEGER PRIMARY KEY AUTOINCREMENT,
    "scope_id" TEXT NOT NULL UNIQUE,
    "episodes" INTEGER NOT NULL DEFAULT 0,
    "memories" INTEGER NOT NULL DEFAULT 0
);
INSERT INTO "search_scope" ("scope_id") SELECT "id" FROM "Scope" ORDER BY "createdAt", "id";
UPDATE "search_scope" SET
    "episodes" = (SELECT COUNT(*) FROM "Episode" WHERE "scopeId" = "search_scope"."scope_id"),
    "memories" = (SELECT COUNT(*) FROM "Memory" WHERE "scopeId" = "search_scope"."scope_id");

CREATE TABLE "search_doc" (
    "rowid" INTEGER PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "ref_id" TEXT NOT NULL,
    "scope_id" TEXT NOT NULL,
    UNIQUE ("kind", "ref_id")
);
INSERT INTO "search_doc" ("rowid", "kind", "ref_id", "scope_id")
    SELECT n."no" * 4294967296 + ROW_NUMBER() OVER (PARTITION BY e."scopeId" ORDER BY e."id"), 'episode', e."id", e."scopeId"
    FROM "Episode" e JOIN "search_scope" n ON n."scope_id" = e."scopeId";
INSERT INTO "search_doc" ("rowid", "kind", "ref_id", "scope_id")
    SELECT n."no" * 4294967296 + 2147483648 + ROW_NUMBER() OVER (PARTITION BY m."scopeId" ORDER BY m."id"), 'memory', m."id", m."scopeId"
    FROM "Memory" m JOIN "search_scope" n ON n."scope_id" = m."scopeId";
CREATE INDEX "search_doc_scope_kind" ON "search_doc" ("scope_id", "kind");

CREATE VIRTUAL TABLE "search_fts" USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO "search_fts" ("rowid", "content")
    SELECT d."rowid", COALESCE(e."author" || ': ', '') || e."content" FROM "search_doc" d JOIN "Episode" e ON e."id" = d."ref_id" WHERE d."kind" = 'episode';
INSERT INTO "search_fts" ("rowid", "content")
    SELECT d."rowid", m."content" FROM "search_doc" d JOIN "Memory" m ON m."id" = d."ref_id" WHERE d."kind" = 'memory';

-- Full-text search (prisma/sqlite/search-index.sql)
-- Full-text search for episodes and memories (SQLite FTS5), kept in sync by triggers in the same
-- transaction as the rows. Idempotent: the migration runner re-applies it after any migration
-- that rebuilds the Episode, Memory or Scope table (SQLite rebuilds drop a table's triggers).
--
-- Episodes are indexed as "author: content" so a question that names the speaker finds their turns.
--
-- search_doc gives every indexed row a stable integer key (FTS5 needs integer rowids; Prisma's
-- rowids are not stable across table rebuilds or VACUUM). search_fts is contentless: the text
-- lives only in Episode/Memory, so a delete there leaves no copy behind.
--
-- Keys are numbered by scope (docs/retrieval.md, "Full text in a crowded store"): search_scope
-- gives each scope a number, and a row's key is number * 2^32 (+ 2^31 for a memory) + its place
-- among the scope's rows of its kind (search_scope counts them; keys are never reused). A scope's
-- rows of one kind are one rowid range, which FTS5 reads without walking the rest of a word's
-- posting list, so a search costs what the scope holds, not what the whole store holds.
CREATE TABLE IF NOT EXISTS "search_scope" (
    "no" INTEGER PRIMARY KEY AUTOINCREMENT,
    "scope_id" TEXT NOT NULL UNIQUE,
    "episodes" INTEGER NOT NULL DEFAULT 0,
    "memories" INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS "search_doc" (
    "rowid" INTEGER PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "ref_id" TEXT NOT NULL,
    "scope_id" TEXT NOT NULL,
    UNIQUE ("kind", "ref_id")
);
CREATE INDEX IF NOT EXISTS "search_doc_scope_kind" ON "search_doc" ("scope_id", "kind");
CREATE VIRTUAL TABLE IF NOT EXISTS "search_fts" USING fts5(
    content,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS "episode_search_insert_v3" AFTER INSERT ON "Episode" BEGIN
    INSERT OR IGNORE INTO "search_scope" ("scope_id") VALUES (NEW."scopeId");
    SELECT RAISE(ABORT, 'full-text index: a scope holds at most 2147483647 episodes') FROM "search_scope" WHERE "scope_id" = NEW."scopeId" AND "episodes" >= 2147483647;
    UPDATE "search_scope" SET "episodes" = "episodes" + 1 WHERE "scope_id" = NEW."scopeId";
    INSERT INTO "search_doc" ("rowid", "kind", "ref_id", "scope_id")
        SELECT "no" * 4294967296 + "episodes", 'episode', NEW."id", NEW."scopeId" FROM "search_scope" WHERE "scope_id" = NEW."scopeId";
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), COALESCE(NEW."author" || ': ', '') || NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "episode_search_update_v2" AFTER UPDATE OF "content", "author" ON "Episode" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), COALESCE(NEW."author" || ': ', '') || NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "episode_search_delete" AFTER DELETE ON "Episode" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    DELETE FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id";
END;

CREATE TRIGGER IF NOT EXISTS "memory_search_insert_v3" AFTER INSERT ON "Memory" BEGIN
    INSERT OR IGNORE INTO "search_scope" ("scope_id") VALUES (NEW."scopeId");
    SELECT RAISE(ABORT, 'full-text index: a scope holds at most 2147483647 memories') FROM "search_scope" WHERE "scope_id" = NEW."scopeId" AND "memories" >= 2147483647;
    UPDATE "search_scope" SET "memories" = "memories" + 1 WHERE "scope_id" = NEW."scopeId";
    INSERT INTO "search_doc" ("rowid", "kind", "ref_id", "scope_id")
        SELECT "no" * 4294967296 + 2147483648 + "memories", 'memory', NEW."id", NEW."scopeId" FROM "search_scope" WHERE "scope_id" = NEW."scopeId";
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"), NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "memory_search_update" AFTER UPDATE OF "content" ON "Memory" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content")
        VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"), NEW."content");
END;
CREATE TRIGGER IF NOT EXISTS "memory_search_delete" AFTER DELETE ON "Memory" BEGIN
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id");
    DELETE FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id";
END;

-- A deleted scope's number goes with it (its rows went before it, by cascade); numbers are not reused.
CREATE TRIGGER IF NOT EXISTS "scope_search_delete" AFTER DELETE ON "Scope" BEGIN
    DELETE FROM "search_scope" WHERE "scope_id" = OLD."id";
END;
