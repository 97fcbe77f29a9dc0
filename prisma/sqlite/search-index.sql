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
-- among the scope's rows of its kind ("episodes" and "memories" count them; keys are never
-- reused). A scope's rows of one kind are one rowid range, which FTS5 reads without walking the
-- rest of a word's posting list, so a search costs what the scope holds, not what the whole store
-- holds. search_scope also keeps the scope's BM25 statistics current: its rows of each kind and
-- their length in tokens. A row's length is the first varint of FTS5's own docsize record (7 bits a
-- byte, high bit set while more follow; three bytes hold up to 2,097,151 tokens), decoded from its
-- hex digits in the triggers below (SQLite has no byte functions, and a view would confuse the
-- migration engine).
CREATE TABLE IF NOT EXISTS "search_scope" (
    "no" INTEGER PRIMARY KEY AUTOINCREMENT,
    "scope_id" TEXT NOT NULL UNIQUE,
    "episodes" INTEGER NOT NULL DEFAULT 0,
    "episode_rows" INTEGER NOT NULL DEFAULT 0,
    "episode_tokens" INTEGER NOT NULL DEFAULT 0,
    "memories" INTEGER NOT NULL DEFAULT 0,
    "memory_rows" INTEGER NOT NULL DEFAULT 0,
    "memory_tokens" INTEGER NOT NULL DEFAULT 0
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
    INSERT INTO "search_fts" ("rowid", "content") VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), COALESCE(NEW."author" || ': ', '') || NEW."content");
    UPDATE "search_scope" SET "episode_rows" = "episode_rows" + 1, "episode_tokens" = "episode_tokens" + COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"))), 0) WHERE "scope_id" = NEW."scopeId";
END;
CREATE TRIGGER IF NOT EXISTS "episode_search_update_v3" AFTER UPDATE OF "content", "author" ON "Episode" BEGIN
    UPDATE "search_scope" SET "episode_tokens" = "episode_tokens" - COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id"))), 0) WHERE "scope_id" = OLD."scopeId";
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content") VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"), COALESCE(NEW."author" || ': ', '') || NEW."content");
    UPDATE "search_scope" SET "episode_tokens" = "episode_tokens" + COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = NEW."id"))), 0) WHERE "scope_id" = NEW."scopeId";
END;
CREATE TRIGGER IF NOT EXISTS "episode_search_delete_v3" AFTER DELETE ON "Episode" BEGIN
    UPDATE "search_scope" SET "episode_rows" = "episode_rows" - 1, "episode_tokens" = "episode_tokens" - COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id"))), 0) WHERE "scope_id" = OLD."scopeId";
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id");
    DELETE FROM "search_doc" WHERE "kind" = 'episode' AND "ref_id" = OLD."id";
END;

CREATE TRIGGER IF NOT EXISTS "memory_search_insert_v3" AFTER INSERT ON "Memory" BEGIN
    INSERT OR IGNORE INTO "search_scope" ("scope_id") VALUES (NEW."scopeId");
    SELECT RAISE(ABORT, 'full-text index: a scope holds at most 2147483647 memories') FROM "search_scope" WHERE "scope_id" = NEW."scopeId" AND "memories" >= 2147483647;
    UPDATE "search_scope" SET "memories" = "memories" + 1 WHERE "scope_id" = NEW."scopeId";
    INSERT INTO "search_doc" ("rowid", "kind", "ref_id", "scope_id")
        SELECT "no" * 4294967296 + 2147483648 + "memories", 'memory', NEW."id", NEW."scopeId" FROM "search_scope" WHERE "scope_id" = NEW."scopeId";
    INSERT INTO "search_fts" ("rowid", "content") VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"), NEW."content");
    UPDATE "search_scope" SET "memory_rows" = "memory_rows" + 1, "memory_tokens" = "memory_tokens" + COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"))), 0) WHERE "scope_id" = NEW."scopeId";
END;
CREATE TRIGGER IF NOT EXISTS "memory_search_update_v3" AFTER UPDATE OF "content" ON "Memory" BEGIN
    UPDATE "search_scope" SET "memory_tokens" = "memory_tokens" - COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id"))), 0) WHERE "scope_id" = OLD."scopeId";
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id");
    INSERT INTO "search_fts" ("rowid", "content") VALUES ((SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"), NEW."content");
    UPDATE "search_scope" SET "memory_tokens" = "memory_tokens" + COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = NEW."id"))), 0) WHERE "scope_id" = NEW."scopeId";
END;
CREATE TRIGGER IF NOT EXISTS "memory_search_delete_v3" AFTER DELETE ON "Memory" BEGIN
    UPDATE "search_scope" SET "memory_rows" = "memory_rows" - 1, "memory_tokens" = "memory_tokens" - COALESCE((SELECT CASE WHEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) < 128 THEN ((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) WHEN ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) < 128 THEN (((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) ELSE ((((instr('0123456789ABCDEF', substr("h", 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 2, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 3, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 4, 1)) - 1) - 128) * 128 + ((instr('0123456789ABCDEF', substr("h", 5, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr("h", 6, 1)) - 1) END FROM (SELECT hex("sz") AS "h" FROM "search_fts_docsize" WHERE "id" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id"))), 0) WHERE "scope_id" = OLD."scopeId";
    DELETE FROM "search_fts" WHERE "rowid" = (SELECT "rowid" FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id");
    DELETE FROM "search_doc" WHERE "kind" = 'memory' AND "ref_id" = OLD."id";
END;

-- A deleted scope's number goes with it (its rows went before it, by cascade); numbers are not reused.
CREATE TRIGGER IF NOT EXISTS "scope_search_delete" AFTER DELETE ON "Scope" BEGIN
    DELETE FROM "search_scope" WHERE "scope_id" = OLD."id";
END;
