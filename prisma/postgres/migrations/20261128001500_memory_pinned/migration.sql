-- AlterTable
ALTER TABLE "Memory" ADD COLUMN     "pinned" BOOLEAN NOT NULL DEFAULT false;
