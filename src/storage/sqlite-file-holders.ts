/**
 * Which processes have a SQLite file open, so a lock error can name them ("pid 4242 (sqlite3)")
 * instead of leaving the operator to guess between another Nocturne process, a CLI command, a
 * sqlite3 shell, a backup or a monitoring reader.
 *
 * Read from Linux's /proc (each process's open file descriptors); elsewhere, or for processes of
 * other users that /proc does not show us, the answer is simply shorter. A best effort for a
 * message, never a decision: nothing waits or fails on what it finds.
 */
import fs from 'node:fs';
import path from 'node:path';

/** One process with the database file (or its -wal / -shm companion) open. */
export interface FileHolder {
  readonly pid: number;
  /** The process's command name, when readable. */
  readonly command?: string;
  /** Whether it is this very process. */
  readonly self: boolean;
}

const PROC = '/proc';

function readLinkOrUndefined(link: string): string | undefined {
  try {
    return fs.readlinkSync(link);
  } catch {
    return undefined;
  }
}

function commandOf(pid: number): string | undefined {
  try {
    return fs.readFileSync(path.join(PROC, String(pid), 'comm'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The processes holding `file` open (empty where /proc is not available). */
export function findFileHolders(file: string): FileHolder[] {
  let pids: number[];
  try {
    pids = fs
      .readdirSync(PROC)
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
  const resolved = fs.existsSync(file) ? fs.realpathSync(file) : path.resolve(file);
  const wanted = new Set([resolved, `${resolved}-wal`, `${resolved}-shm`]);
  const holders: FileHolder[] = [];
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(path.join(PROC, String(pid), 'fd'));
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      const target = readLinkOrUndefined(path.join(PROC, String(pid), 'fd', fd));
      return target !== undefined && wanted.has(target);
    });
    if (holds) holders.push({ pid, command: commandOf(pid), self: pid === process.pid });
  }
  return holders;
}

/** "pid 4242 (sqlite3), pid 4250 (node)"; "this process (pid 17)" for our own. */
export function describeFileHolders(holders: readonly FileHolder[]): string {
  return holders.map((h) => (h.self ? `this process (pid ${h.pid})` : `pid ${h.pid}${h.command ? ` (${h.command})` : ''}`)).join(', ');
}
