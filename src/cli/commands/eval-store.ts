/**
 * The temporary store `eval locomo` measures on, and the crowd it may be filled with:
 * `--database sqlite` (default: a SQLite file in a temporary folder) or `--database postgres`
 * (a PostgreSQL server started for the run in a temporary folder, from the server binaries
 * installed on the machine, and stopped after it); `--crowd N [--crowd-scopes S]`.
 * Nothing is written to your own database.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../config/load-config';
import type { CrowdOptions } from '../../evaluation/locomo-crowd';
import { AppError, ValidationError } from '../../shared/errors';
import { startLocalPostgres } from '../../storage/local-postgres';
import type { CommandContext } from '../command';

/** The providers an evaluation can run on. */
const EVAL_DATABASES = ['sqlite', 'postgres'] as const;
export type EvalDatabase = (typeof EVAL_DATABASES)[number];

const DEFAULT_CROWD_SCOPES = 1_000;
/** Larger crowds would take hours to load here; the goal is measured at one million. */
const MAX_CROWD = 10_000_000;

function usageError(message: string): ValidationError {
  return new ValidationError(message, {
    code: 'cli.usage',
    hint: 'e.g. npm run cli -- eval locomo --data FILE --crowd 1000000 --crowd-scopes 1000 [--database postgres]',
  });
}

/** A whole number as typed (`1000000` or `1_000_000`), or NaN. */
function wholeNumber(text: string): number {
  const cleaned = text.trim().replace(/_/g, '');
  return /^-?\d+$/.test(cleaned) ? Number(cleaned) : Number.NaN;
}

/** `--crowd N [--crowd-scopes S]`, checked; undefined without `--crowd`. */
export function parseCrowdOptions(values: CommandContext['values']): CrowdOptions | undefined {
  const crowd = values.crowd as string | undefined;
  const scopesText = values['crowd-scopes'] as string | undefined;
  if (crowd === undefined) {
    if (scopesText !== undefined) throw usageError('--crowd-scopes needs --crowd N (the number of crowd episodes)');
    return undefined;
  }
  const episodes = wholeNumber(crowd);
  if (!Number.isInteger(episodes) || episodes < 1 || episodes > MAX_CROWD) {
    throw usageError(`--crowd must be a whole number of episodes from 1 to ${MAX_CROWD.toLocaleString('en')} (got "${crowd}")`);
  }
  const scopes = scopesText === undefined ? Math.min(DEFAULT_CROWD_SCOPES, episodes) : wholeNumber(scopesText);
  if (!Number.isInteger(scopes) || scopes < 1) throw usageError(`--crowd-scopes must be a whole number of at least 1 (got "${scopesText}")`);
  if (scopes > episodes) throw usageError(`--crowd-scopes (${scopes}) cannot exceed --crowd (${episodes}): every crowd scope holds at least one episode`);
  return { episodes, scopes };
}

/** `--database`, checked. */
export function parseEvalDatabase(values: CommandContext['values']): EvalDatabase {
  const database = (values.database as string | undefined) ?? 'sqlite';
  if (!(EVAL_DATABASES as readonly string[]).includes(database)) throw usageError(`--database must be sqlite or postgres (got "${database}")`);
  return database as EvalDatabase;
}

export interface EvalStore {
  readonly config: Config;
  readonly database: EvalDatabase;
  /** Stops the PostgreSQL server (if any) and removes the temporary folder. */
  remove(): Promise<void>;
}

/** A fresh temporary store of the chosen kind, with the configured embedder and vector store kind. */
export async function openEvalStore(config: Config, database: EvalDatabase): Promise<EvalStore> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-eval-'));
  const vectors: Config['vectors'] =
    config.vectors.store === 'sqlite-vec'
      ? { store: 'sqlite-vec', file: path.join(dir, 'vectors.db'), scanMemoryBytes: config.vectors.scanMemoryBytes }
      : config.vectors;
  const removeDir = () => fs.rmSync(dir, { recursive: true, force: true });
  if (database === 'sqlite') {
    const file = path.join(dir, 'eval.db');
    return {
      config: { ...config, dataDir: dir, database: { provider: 'sqlite', url: `file:${file}`, file }, vectors },
      database,
      remove: async () => removeDir(),
    };
  }
  const server = await startLocalPostgres().catch((error: unknown) => {
    removeDir();
    throw new AppError(`--database postgres could not start a PostgreSQL server: ${(error as Error).message}`, {
      code: 'eval.postgres_unavailable',
      category: 'system',
      hint: 'Install the PostgreSQL server package (e.g. apt-get install postgresql), or run the evaluation on SQLite.',
    });
  });
  const url = await server.createDatabase('nocturne_eval').catch(async (error: unknown) => {
    await server.stop();
    removeDir();
    throw error;
  });
  return {
    config: { ...config, dataDir: dir, database: { provider: 'postgres', url }, vectors },
    database,
    async remove() {
      await server.stop();
      removeDir();
    },
  };
}
