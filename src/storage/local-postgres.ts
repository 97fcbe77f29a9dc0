/**
 * A throwaway PostgreSQL server on loopback, started from the server binaries installed on the
 * machine. The test suite uses it (a real PostgreSQL, no mocks), and `npm run db:migrate` uses it
 * to generate PostgreSQL migrations when no server is configured.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freeLoopbackPort as freePort } from '../shared/free-port';

const run = promisify(execFile);

const CANDIDATE_BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin', '/usr/local/pgsql/bin'];

export interface LocalPostgres {
  /** postgresql:// URL of the `postgres` database with the superuser. */
  readonly url: string;
  readonly port: number;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Shuts the server down (fast shutdown), keeping its data: a database outage, for the chaos tests. */
  halt(): Promise<void>;
  /** Starts the halted server again on the same port with the same data. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The folder holding initdb/pg_ctl/postgres, or undefined with the reason it was not found. */
export function findPostgresBinaries(): { dir?: string; reason?: string } {
  const dirs = CANDIDATE_BIN_DIRS;
  const dir = dirs.find((candidate) => fs.existsSync(path.join(candidate, 'initdb')) && fs.existsSync(path.join(candidate, 'postgres')));
  return dir ? { dir } : { reason: `no PostgreSQL server binaries in ${dirs.join(', ')} (install the postgresql Debian package)` };
}

/** PostgreSQL refuses to run as root; as root, the cluster is run as the `postgres` user. */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root, but there is no `postgres` user to run the PostgreSQL server as');
  }
}

/** Starts a fresh cluster in a temporary folder; ~1-2 s. Throws when no binaries exist. */
export async function startLocalPostgres(): Promise<LocalPostgres> {
  const { dir: binDir, reason } = findPostgresBinaries();
  if (!binDir) throw new Error(reason);
  const owner = await postgresUser();
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-pg-'));
  const dataDir = path.join(base, 'data');
  const socketDir = path.join(base, 'sock');
  fs.mkdirSync(socketDir);
  if (owner) fs.chownSync(base, owner.uid, owner.gid);
  if (owner) fs.chownSync(socketDir, owner.uid, owner.gid);
  await run(path.join(binDir, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'], { ...owner });
  const port = await freePort();
  const args = [
    '-D',
    dataDir,
    '-h',
    '127.0.0.1',
    '-p',
    String(port),
    '-k',
    socketDir,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=200',
  ];
  let child: ChildProcess;
  let stderr = '';
  const launch = async () => {
    child = spawn(path.join(binDir, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...owner });
    stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await waitUntilReady(binDir, port, child, () => stderr);
  };
  const halt = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT'); // fast shutdown
    await exited;
  };
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  await launch();

  const psql = async (sql: string) => {
    await run(path.join(binDir, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-qc', sql]);
  };
  return {
    url,
    port,
    async createDatabase(name: string) {
      await psql(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      return `postgresql://postgres@127.0.0.1:${port}/${encodeURIComponent(name)}`;
    },
    halt,
    resume: launch,
    async stop() {
      await halt();
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}

async function waitUntilReady(binDir: string, port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`PostgreSQL exited during start-up: ${stderr().trim()}`);
    try {
      await run(path.join(binDir, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q']);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  child.kill('SIGKILL');
  throw new Error(`PostgreSQL did not become ready within 30 s: ${stderr().trim()}`);
}
