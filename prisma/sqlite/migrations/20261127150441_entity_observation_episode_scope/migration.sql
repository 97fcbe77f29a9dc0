-- Before the composite key (scopeId, episodeId) -> Episode: an observation whose episode is not an
-- episode of its own scope (another scope's, or one no longer stored) keeps its text and loses the
-- link, and the scope's audit log records each link dropped (action "repair"), so an operator can
-- see what the migration changed (docs/storage.md, "Isolation by construction").
INSERT INTO "AuditEvent" ("id", "scopeId", "action", "subjectType", "subjectId", "before", "after", "reason", "createdAt")
SELECT 'repair-observation-' || o."id", o."scopeId", 'repair', 'entityObservation', o."id", json_object('episodeId', o."episodeId"), json_object('episodeId', NULL),
  'migration: the observation named an episode that is not in its scope; the link was dropped', strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')
FROM "EntityObservation" o
WHERE o."episodeId" IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM "Episode" e WHERE e."scopeId" = o."scopeId" AND e."id" = o."episodeId");
UPDATE "EntityObservation" AS o SET "episodeId" = NULL
WHERE o."episodeId" IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM "Episode" e WHERE e."scopeId" = o."scopeId" AND e."id" = o."episodeId");

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_EntityObservation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "scopeId" TEXT NOT NULL,
    "entityId" TEXT NOT NULL,
    "episodeId" TEXT,
    "content" TEXT NOT NULL,
    "consolidated" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "EntityObservation_scopeId_fkey" FOREIGN KEY ("scopeId") REFERENCES "Scope" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "EntityObservation_scopeId_entityId_fkey" FOREIGN KEY ("scopeId", "entityId") REFERENCES "Entity" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "EntityObservation_scopeId_episodeId_fkey" FOREIGN KEY ("scopeId", "episodeId") REFERENCES "Episode" ("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_EntityObservation" ("consolidated", "content", "createdAt", "entityId", "episodeId", "id", "scopeId") SELECT "consolidated", "content", "createdAt", "entityId", "episodeId", "id", "scopeId" FROM "EntityObservation";
DROP TABLE "EntityObservation";
ALTER TABLE "new_EntityObservation" RENAME TO "EntityObservation";
CREATE INDEX "EntityObservation_scopeId_entityId_consolidated_idx" ON "EntityObservation"("scopeId", "entityId", "consolidated");
CREATE INDEX "EntityObservation_scopeId_episodeId_idx" ON "EntityObservation"("scopeId", "episodeId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
