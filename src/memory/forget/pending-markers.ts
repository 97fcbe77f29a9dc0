/**
 * The markers of forgets whose after-commit work (full-text purge, checkpoints, vector deletes) is
 * unfinished: one file `<pendingFile>.<pid>.<n>` per forget, written before its transaction and
 * removed once that work is done, so concurrent forgets of several processes never clear each
 * other's, and the next start finishes the work of a process that died (forget-service.ts).
 */
import fs from 'node:fs/promises';
import path from 'node:path';

/** Whether a process with this id runs (ours counts as gone: a marker of ours at start is a former run's). */
function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The marker files of one process; `pendingFile` undefined writes none. */
export function pendingMarkers(pendingFile: string | undefined) {
  let markers = 0;
  /** Writes this forget's marker before its transaction; returns its path. */
  async function markPending(): Promise<string | null> {
    if (!pendingFile) return null;
    const marker = `${pendingFile}.${process.pid}.${++markers}`;
    await fs.mkdir(path.dirname(marker), { recursive: true });
    await fs.writeFile(marker, `${new Date().toISOString()}\n`);
    return marker;
  }

  /** Markers left by processes that are gone (a live one finishes its own work). */
  async function orphanMarkers(): Promise<string[]> {
    if (!pendingFile) return [];
    const dir = path.dirname(pendingFile);
    const prefix = `${path.basename(pendingFile)}.`;
    const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => n.startsWith(prefix));
    return names.filter((n) => !alive(Number(n.slice(prefix.length).split('.')[0]))).map((n) => path.join(dir, n));
  }

  /** Runs `work` after writing a marker; the marker goes when the work throws (nothing was committed). */
  async function marked<T>(work: (marker: string | null) => Promise<T>): Promise<T> {
    const marker = await markPending();
    try {
      return await work(marker);
    } catch (error) {
      if (marker) await fs.rm(marker, { force: true });
      throw error;
    }
  }

  return { marked, orphanMarkers };
}
