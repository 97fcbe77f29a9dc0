/**
 * `migrate-store --to postgres --database-url URL [--vectors qdrant --qdrant URL]`: copies every
 * scope from the configured store to another one and verifies the copy (see
 * src/export/migrate-store.ts and docs/export.md). The target is described by flags; the source
 * is the configuration (DB_PROVIDER, DATABASE_URL, VECTOR_STORE, ...). Without --vectors the
 * target keeps using the configured vector index. Safe to rerun. Exit status 0 when every scope
 * verified, 1 otherwise.
 */
import fs from 'node:fs';
import { plural } from '../../shared/plural';
import path from 'node:path';
import type { Config } from '../../config/load-config';
import { migrateBetween, MIGRATED_TABLES, type ScopeMigration } from '../../export/migrate-store';
import { createEmbedder } from '../../vectors/embedders/create-embedder';
import { ValidationError } from '../../shared/errors';
import { registerSecrets } from '../../shared/redact';
import { describeDatabase } from '../../storage/database';
import { writeResult, type CommandRunner, type CommandContext } from '../command';

type DatabaseConfig = Config['database'];
type VectorConfig = Config['vectors'];

function usageError(message: string): ValidationError {
  return new ValidationError(message, {
    code: 'cli.usage',
    hint: 'e.g. npm run cli -- migrate-store --to postgres --database-url postgresql://user:pass@host:5432/nocturne [--vectors qdrant --qdrant http://host:6333]',
  });
}

/** The target database from --to and --database-url. */
export function targetDatabase(values: CommandContext['values']): DatabaseConfig {
  const to = values.to as string | undefined;
  const url = values['database-url'] as string | undefined;
  if (to !== 'postgres' && to !== 'sqlite') throw usageError('migrate-store needs --to postgres (or --to sqlite)');
  if (!url) throw usageError('migrate-store needs --database-url URL of the target database');
  if (to === 'postgres') {
    if (!/^postgres(ql)?:\/\//.test(url)) throw usageError('--database-url must be a postgresql://user:password@host:5432/database URL with --to postgres');
    try {
      registerSecrets([decodeURIComponent(new URL(url).password)]);
    } catch {
      throw usageError('--database-url is not a valid URL');
    }
    return { provider: 'postgres', url };
  }
  const file = path.resolve(url.replace(/^file:/, ''));
  return { provider: 'sqlite', url: `file:${file}`, file };
}

/** The target vector index from --vectors, --qdrant and --vectors-file; without --vectors, the configured one. */
export function targetVectors(values: CommandContext['values'], config: Config, database: DatabaseConfig): VectorConfig {
  const store = values.vectors as string | undefined;
  if (store === undefined) {
    if (values.qdrant !== undefined)
      return { store: 'qdrant', url: values.qdrant as string, apiKey: config.vectors.store === 'qdrant' ? config.vectors.apiKey : undefined };
    return config.vectors;
  }
  if (store === 'qdrant') {
    const url = values.qdrant as string | undefined;
    if (!url || !/^https?:\/\//.test(url)) throw usageError('--vectors qdrant needs --qdrant URL, e.g. http://127.0.0.1:6333');
    return { store: 'qdrant', url, apiKey: config.vectors.store === 'qdrant' ? config.vectors.apiKey : undefined };
  }
  if (store === 'sqlite-vec') {
    const file =
      (values['vectors-file'] as string | undefined) ?? (database.provider === 'sqlite' ? path.join(path.dirname(database.file), 'vectors.db') : undefined);
    if (!file) throw usageError('--vectors sqlite-vec with a PostgreSQL target needs --vectors-file PATH');
    return { store: 'sqlite-vec', file: path.resolve(file) };
  }
  throw usageError(`--vectors must be sqlite-vec or qdrant, got "${store}"`);
}

function sameDatabase(a: DatabaseConfig, b: DatabaseConfig): boolean {
  if (a.provider === 'sqlite' && b.provider === 'sqlite') return path.resolve(a.file) === path.resolve(b.file);
  return a.provider === b.provider && a.url === b.url;
}

function sameVectors(a: VectorConfig, b: VectorConfig): boolean {
  if (a.store === 'sqlite-vec' && b.store === 'sqlite-vec') return path.resolve(a.file) === path.resolve(b.file);
  if (a.store === 'qdrant' && b.store === 'qdrant') return a.url.replace(/\/+$/, '') === b.url.replace(/\/+$/, '');
  return false;
}

function describeVectors(vectors: VectorConfig): string {
  return vectors.store === 'sqlite-vec' ? `sqlite-vec ${vectors.file}` : `Qdrant ${new URL(vectors.url).host}`;
}

function scopeLine(s: ScopeMigration): string {
  const shown = (['episodes', 'memories', 'auditEvents', 'llmCalls'] as const).map((t) => `${t} ${s.counts[t].target}/${s.counts[t].source}`).join('  ');
  const mark = s.verified ? 'verified' : `NOT VERIFIED: ${s.problem ?? 'unknown'}`;
  return `${s.key.padEnd(28)} ${s.status.padEnd(9)} ${shown}  vectors reused ${s.vectorsReused}, pending ${s.pendingEmbeddings}  ${mark}`;
}

/** The `migrate-store` command. */
export const migrateStoreCommand: CommandRunner = {
  async run(ctx) {
    const { config, logger } = ctx;
    const target = targetDatabase(ctx.values);
    const vectors = targetVectors(ctx.values, config, target);
    if (sameDatabase(config.database, target)) throw usageError(`the target is the configured database itself (${describeDatabase(target)})`);
    const sharedIndex = sameVectors(config.vectors, vectors);
    const embedder = createEmbedder(config.embedder, { logger });
    const identity = { embedder: embedder.name, dimension: embedder.dimension };
    await embedder.close();

    // A missing sqlite-vec file means there are no vectors to reuse (and none is created here).
    const sourceHasIndex = config.vectors.store === 'qdrant' || fs.existsSync(config.vectors.file);
    process.stderr.write(`migrating ${describeDatabase(config.database)} -> ${describeDatabase(target)} (vectors: ${describeVectors(vectors)})\n`);
    const report = await migrateBetween({
      source: { database: config.database, vectors: sharedIndex || !sourceHasIndex ? null : config.vectors },
      target: { database: target, vectors: sharedIndex ? null : vectors },
      embedder: identity,
      sharedIndex,
      logger,
      onScope: (scope, done, total) => process.stderr.write(`  [${done}/${total}] ${scope.key}: ${scope.status}\n`),
    });

    const next =
      `next: stop the service, set DB_PROVIDER=${target.provider} DATABASE_URL=<the target URL>` +
      (sharedIndex
        ? ''
        : vectors.store === 'qdrant'
          ? ` VECTOR_STORE=qdrant QDRANT_URL=${vectors.url}`
          : ` VECTOR_STORE=sqlite-vec (vectors file ${vectors.file})`) +
      ', and start it again';
    const text = [
      `vectors: ${report.vectors.plan} (${report.vectors.reason})`,
      ...report.scopes.map(scopeLine),
      `LlmCall rows of no scope: ${report.unscopedLlmCalls.target}/${report.unscopedLlmCalls.source} (${report.unscopedLlmCalls.copied} copied now)`,
      ...(report.targetOnlyScopes.length > 0 ? [`scopes only in the target (left alone): ${report.targetOnlyScopes.join(', ')}`] : []),
      report.ok
        ? `verified: ${plural(report.scopes.length, 'scope')}, every table (${MIGRATED_TABLES.join(', ')}) has the same rows in the target\n${next}`
        : 'NOT verified: see the scopes marked above; nothing was overwritten that the source lacks. Fix and rerun (it is safe).',
    ].join('\n');
    writeResult(ctx, { source: describeDatabase(config.database), target: describeDatabase(target), ...report }, text);
    return report.ok ? 0 : 1;
  },
};
