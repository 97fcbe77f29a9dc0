/**
 * `npm run db:migrate -- <name> [--postgres-url URL]`
 *
 * Creates one migration for both providers from the change to prisma/models.prisma, under one
 * name: prisma/sqlite/migrations/<ts>_<name>/ and prisma/postgres/migrations/<ts>_<name>/.
 * The SQLite side uses a scratch file; the PostgreSQL side uses a scratch database on the given
 * server, or a throwaway local server started from the installed binaries. No download needed.
 * Commit the new folders; `npm start` and the CLI apply pending migrations on start-up.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMigration } from '../src/storage/migrations/migration-runner';
import { createPostgresMigrationAdapter } from '../src/storage/postgres-driver';
import { startLocalPostgres, type LocalPostgres } from '../src/storage/local-postgres';
import { createSqliteMigrationAdapter } from '../src/storage/sqlite-driver';

async function main(argv: string[]): Promise<number> {
  const urlIndex = argv.indexOf('--postgres-url');
  const postgresUrl = urlIndex >= 0 ? argv[urlIndex + 1] : undefined;
  const name = argv.filter((arg, i) => (!arg.startsWith('--') && i !== urlIndex + 1) || (urlIndex < 0 && !arg.startsWith('--')))[0];
  if (!name || !/^[a-z0-9_]+$/.test(name)) {
    process.stderr.write(
      'usage: npm run db:migrate -- <name> [--postgres-url postgresql://...]\n  <name>: lower-case letters, digits and _, e.g. add_memory_summary\n',
    );
    return 2;
  }
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const directoryName = `${stamp}_${name}`;

  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-migrate-'));
  let local: LocalPostgres | undefined;
  try {
    const sqlite = await createMigration({
      provider: 'sqlite',
      adapterFactory: createSqliteMigrationAdapter({ file: path.join(scratch, 'scratch.db') }),
      name,
      directoryName,
    });
    let serverUrl = postgresUrl;
    if (!serverUrl) {
      local = await startLocalPostgres();
      serverUrl = local.url;
    }
    const scratchDbUrl = local ? await local.createDatabase('nocturne_migrate') : serverUrl;
    const postgres = await createMigration({
      provider: 'postgres',
      adapterFactory: createPostgresMigrationAdapter(scratchDbUrl),
      name,
      directoryName,
    });
    for (const created of [sqlite, postgres]) {
      if (created) process.stdout.write(`created ${path.relative(process.cwd(), created.file)}\n`);
    }
    if (!sqlite && !postgres) process.stdout.write('no changes: the models match the migrations\n');
    return 0;
  } finally {
    await local?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`db:migrate failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
