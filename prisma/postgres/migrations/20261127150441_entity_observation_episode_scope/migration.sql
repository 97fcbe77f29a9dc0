-- Before the composite key (scopeId, episodeId) -> Episode: an observation whose episode is not an
-- episode of its own scope (another scope's, or one no longer stored) keeps its text and loses the
-- link, and the scope's audit log records each link dropped (action "repair"), so an operator can
-- see what the migration changed (docs/storage.md, "Isolation by construction").
INSERT INTO "AuditEvent" ("id", "scopeId", "action", "subjectType", "subjectId", "before", "after", "reason", "createdAt")
SELECT 'repair-observation-' || o."id", o."scopeId", 'repair', 'entityObservation', o."id", jsonb_build_object('episodeId', o."episodeId"), jsonb_build_object('episodeId', NULL),
  'migration: the observation named an episode that is not in its scope; the link was dropped', CURRENT_TIMESTAMP
FROM "EntityObservation" o
WHERE o."episodeId" IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM "Episode" e WHERE e."scopeId" = o."scopeId" AND e."id" = o."episodeId");
UPDATE "EntityObservation" AS o SET "episodeId" = NULL
WHERE o."episodeId" IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM "Episode" e WHERE e."scopeId" = o."scopeId" AND e."id" = o."episodeId");

-- AddForeignKey
ALTER TABLE "EntityObservation" ADD CONSTRAINT "EntityObservation_scopeId_episodeId_fkey" FOREIGN KEY ("scopeId", "episodeId") REFERENCES "Episode"("scopeId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
