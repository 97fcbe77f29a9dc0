/** How much memory a process the test started has held at its peak, as a supervisor reads it. */
import fs from 'node:fs';

/** The peak resident memory (VmHWM) of process `pid` so far, in bytes; undefined without /proc or once it ended. */
export function peakRss(pid: number): number | undefined {
  try {
    const kb = Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kb) ? kb * 1024 : undefined;
  } catch {
    return undefined;
  }
}
