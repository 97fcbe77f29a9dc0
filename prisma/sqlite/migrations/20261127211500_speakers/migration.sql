-- Who said a turn, and whom a memory is about (groups with speakers).
ALTER TABLE "Episode" ADD COLUMN "authorId" TEXT;
ALTER TABLE "Memory" ADD COLUMN "subjectId" TEXT;
ALTER TABLE "Memory" ADD COLUMN "subjectName" TEXT;

-- The channels stored the speaker's id in the metadata until now.
UPDATE "Episode" SET "authorId" = CAST(json_extract("metadata", '$.authorId') AS TEXT)
WHERE "role" = 'user' AND "metadata" IS NOT NULL AND json_valid("metadata") AND json_type("metadata", '$.authorId') IN ('text', 'integer');

CREATE INDEX "Episode_scopeId_authorId_idx" ON "Episode"("scopeId", "authorId");
CREATE INDEX "Memory_scopeId_subjectId_idx" ON "Memory"("scopeId", "subjectId");
