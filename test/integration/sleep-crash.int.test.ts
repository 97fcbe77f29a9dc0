/**
 * Crash safety of consolidation: a child process consolidating 50 episodes is killed with
 * SIGKILL at random moments (before, during and after the model call and the apply); each time
 * the batch is found either entirely applied or not at all, and a clean rerun completes it with
 * no duplicate memory.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { uuidv7 } from '../../src/shared/ids';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { heavyConsolidationAnswer } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, ROOT } from '../support/run-process';

const EPISODES = 50;
/** When to kill after the model answered, as a share of the rest of an undisturbed run (planning, the one commit, then dreaming). */
const KILL_AT = [0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9];
const TRIALS = KILL_AT.length;

describe('sleep: SIGKILL during consolidation', () => {
  let llm: AnthropicDouble;
  let core: Core;
  let config: Config;
  let env: NodeJS.ProcessEnv;
  /** When the model last answered, and what to do then (arm the kill timer). */
  let answeredAt = 0;
  let onAnswer: (() => void) | undefined;

  beforeAll(async () => {
    llm = await startAnthropicDouble({
      responder: (seen) => {
        if (answeredAt === 0 && seen.system?.includes('memory consolidation system')) {
          answeredAt = Date.now();
          onAnswer?.();
        }
        return { kind: 'text', text: heavyConsolidationAnswer(seen.messages.at(-1)?.text ?? '') };
      },
    });
    const dir = tempDir();
    env = cleanEnv({ DATA_DIR: dir, LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-crash-test-0000', ANTHROPIC_BASE_URL: llm.url, LOG_LEVEL: 'error' });
    config = loadConfig({ env: env as Record<string, string>, envFile: false });
    core = await createCore(config, memoryLogger().logger, { embedder: createHashEmbedder({ dimension: 256 }) });
    for (let t = 0; t <= TRIALS; t++) {
      await core.episodeService.ingestMany(
        { key: `crash:${t}`, channel: 'test' },
        Array.from({ length: EPISODES }, (_, i) =>
          core.episodeService.normalize(
            {
              content: `fact number ${i} of trial ${t}`,
              role: 'user',
              conversationId: `c${t}-${Math.floor(i / 25)}`,
              externalId: `e${i}`,
              timestamp: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
            },
            'test',
          ),
        ),
      );
    }
  });
  afterAll(async () => {
    await core?.close();
    await llm?.stop();
  });

  /** Runs the child; with `killAfterMs`, kills it that long after the model answered. */
  function runChild(key: string, killAfterMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; answeredAt: number; endedAt: number }> {
    return new Promise((resolve, reject) => {
      // node itself with tsx as a loader: the tsx CLI would run the script in a grandchild that
      // a SIGKILL of the wrapper would not reach.
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/support/consolidate-child.ts'), key], {
        env,
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let endedAt = 0;
      let err = '';
      answeredAt = 0;
      onAnswer = killAfterMs === undefined ? undefined : () => setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('"status"')) endedAt = Date.now();
      });
      child.on('error', reject);
      child.on('close', (code, signal) => {
        onAnswer = undefined;
        if (code === 1) reject(new Error(`${key} (kill after ${killAfterMs}ms): ${err}`));
        else resolve({ code, signal, answeredAt, endedAt: endedAt || Date.now() });
      });
    });
  }

  async function state(key: string) {
    const scopeId = (await core.scopes.findByKey(key))!.id;
    const prisma = core.db.prisma;
    return {
      scopeId,
      consolidated: await prisma.episode.count({ where: { scopeId, consolidated: true } }),
      memories: await prisma.memory.count({ where: { scopeId } }),
      creates: await prisma.auditEvent.count({ where: { scopeId, action: 'create' } }),
      observations: await prisma.entityObservation.count({ where: { scopeId } }),
    };
  }

  it('leaves every batch entirely applied or not at all, and a rerun completes it exactly once', async () => {
    const calibration = await runChild('crash:0');
    expect(calibration.code).toBe(0);
    const full = await state('crash:0');
    expect(full).toMatchObject({ consolidated: EPISODES, memories: EPISODES, creates: EPISODES });
    expect(full.observations).toBe(20); // one prompt, 20 entities
    const duration = calibration.endedAt - calibration.answeredAt;

    const outcomes: string[] = [];
    for (let t = 1; t <= TRIALS; t++) {
      const key = `crash:${t}`;
      const killAfter = Math.round(KILL_AT[t - 1]! * duration);
      const run = await runChild(key, killAfter);
      const after = await state(key);
      const applied = after.consolidated === EPISODES;
      outcomes.push(`${killAfter}ms:${run.signal ?? run.code}:${applied ? 'applied' : 'none'}`);
      if (applied) expect(after).toMatchObject({ memories: EPISODES, creates: EPISODES, observations: full.observations });
      else expect(after).toMatchObject({ consolidated: 0, memories: 0, creates: 0, observations: 0 });

      // The killed process's lease expires; a clean rerun finishes the work exactly once.
      await core.db.prisma.lease.updateMany({ data: { expiresAt: new Date(0) } });
      await core.sleep.consolidateScope(after.scopeId, {
        now: new Date(),
        runId: uuidv7(),
        shouldContinue: () => true,
        tokenBudgetLeft: Number.POSITIVE_INFINITY,
      });
      expect(await state(key)).toMatchObject({ consolidated: EPISODES, memories: EPISODES, creates: EPISODES, observations: full.observations });
    }
    process.stdout.write(`crash trials, ${duration} ms run (kill delay:signal:state): ${outcomes.join(' ')}\n`);
    // Some kills landed before the commit (otherwise the test proved nothing); where the rest
    // landed depends on the machine's load, and each was checked above either way.
    expect(outcomes.some((o) => o.endsWith('none'))).toBe(true);
    // Eleven child processes one after the other, each loading the core (~2 s of CPU alone): it
    // passed 240 s when the cores were shared with five other test runs.
  }, 900_000);
});
