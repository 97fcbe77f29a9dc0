/**
 * Issue 17, stopping: a supervisor (systemd, CI, a shell's `kill`) starts `npm start` and later
 * sends SIGTERM to the process it started, npm itself. npm forwards the signal to the script's
 * shell (`sh -c "<script>"`); dash, Debian's /bin/sh, does not exec a lone command, so without
 * `exec` in the script the shell died and node was left running, re-parented to PID 1. This test
 * starts `npm start` exactly so and checks that no process of the tree is left.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { tempDir } from '../support/databases';
import { cleanEnv, ROOT } from '../support/run-process';

/** PIDs of processes whose environment carries DATA_DIR=dataDir (npm, sh, node: the whole tree). */
function processesWith(dataDir: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      const state = fs.readFileSync(`/proc/${entry}/stat`, 'latin1').replace(/^.*\)\s+/, '')[0];
      if (state !== 'Z' && environ.includes(`DATA_DIR=${dataDir}`)) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('npm start under a supervisor (issue 17, stopping)', () => {
  it('SIGTERM to the npm process leaves no process of its tree running', async () => {
    const dataDir = path.join(tempDir('nocturne-npm-stop-'), 'data');
    const env = cleanEnv({ DATA_DIR: dataDir, TERMINAL: 'off', SLEEP_ENABLED: 'false', ANTHROPIC_API_KEY: 'sk-ant-npm-stop-test-0000' });
    const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const npmExited = new Promise<number | null>((resolve) => npm.on('close', (code) => resolve(code)));
    try {
      const readyBy = Date.now() + 60_000;
      while (!/Nocturne is ready/.test(output)) {
        if (Date.now() > readyBy || npm.exitCode !== null) throw new Error(`npm start did not become ready:\n${output}`);
        await sleep(100);
      }
      const tree = processesWith(dataDir);
      expect(tree).toContain(npm.pid);
      expect(tree.length).toBeGreaterThanOrEqual(2); // npm and node (and sh, without exec)

      npm.kill('SIGTERM');
      const goneBy = Date.now() + 15_000;
      let left = processesWith(dataDir);
      while (left.length > 0 && Date.now() < goneBy) {
        await sleep(200);
        left = processesWith(dataDir);
      }
      const described = left.map((pid) => `${pid}: ${fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ')}`);
      expect(described).toEqual([]);
      await npmExited;
      expect(output).toMatch(/stopped cleanly/);
    } finally {
      for (const pid of processesWith(dataDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }, 120_000);
});
