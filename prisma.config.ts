/**
 * Prisma CLI configuration, used only by `prisma generate` (see scripts/prisma-generate.ts).
 *
 * Migrations never go through the Prisma CLI: it drives a native schema engine that it would have
 * to download. Nocturne applies and creates migrations with its own runner on
 * @prisma/schema-engine-wasm (src/storage/migrations/). Generation still checks that a schema
 * engine binary exists, so we point it at a file that is always present; it is never executed.
 */
import path from 'node:path';
import { defineConfig } from 'prisma/config';

process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= path.join(__dirname, 'prisma', 'models.prisma');

export default defineConfig({
  schema: path.join('prisma', 'sqlite'),
});
