-- Who said a turn, and whom a memory is about (groups with speakers).
ALTER TABLE "Episode" ADD COLUMN "authorId" TEXT;
ALTER TABLE "Memory" ADD COLUMN "subjectId" TEXT,
ADD COLUMN "subjectName" TEXT;

-- The channels stored the speaker's id in the metadata until now.
UPDATE "Episode" SET "authorId" = "metadata"->>'authorId'
WHERE "role" = 'user' AND jsonb_typeof("metadata"->'authorId') IN ('string', 'number');

CREATE INDEX "Episode_scopeId_authorId_idx" ON "Episode"("scopeId", "authorId");
CREATE INDEX "Memory_scopeId_subjectId_idx" ON "Memory"("scopeId", "subjectId");
