/**
 * Load (issue 8), the short version of bench/load.bench.ts: the composed service (src/service.ts)
 * in this process, 50 Telegram chats sending a steady stream of messages through the fake Bot API
 * for 30 s (the world — fake Bot API, model doubles, the people — runs in a child process, so the
 * memory measured here is the service's). Asserted:
 *
 * - every message answered exactly once (none lost, none duplicated);
 * - each chat's replies in the order of its messages (bursts put several messages of one chat in
 *   flight at once);
 * - bounded heap: V8 heap in use after a forced full GC at the end, compared with the same after
 *   10 s of warm-up. Jest workers have no `global.gc`, so the run turns it on with
 *   `v8.setFlagsFromString('--expose-gc')` and takes `gc` from `vm.runInNewContext` (Node 20); if
 *   that ever fails the figures are taken without a forced GC and the bound is loosened (and the
 *   test says so). With a forced GC what is left is what the service retains, so the bound can be
 *   tight enough to mean something: at most {@link RETAINED_BYTES_PER_MESSAGE} bytes per message
 *   handled after warm-up (plus {@link HEAP_SLACK_MB} for what is allocated once, e.g. code
 *   compiled late and caches filling up): 2.3 MB for the 200 messages after warm-up, where 0.5-0.6
 *   MB were measured. A service that kept about 8 KB or more of every message (its prompt, its
 *   reply, its update object) would exceed it.
 *
 * The embedder is the Ollama double's (hashed vectors), not the in-process model, and sleep is off:
 * the local model runs TensorFlow on the service's thread, and a consolidation tick (every minute)
 * allocates once for code it runs for the first time, which a 30-second window cannot tell apart
 * from growth. Both are in bench/load.bench.ts, which runs for minutes (docs/channels.md, "Load").
 */
import { describe, expect, it } from '@jest/globals';
import { formatLoadResult, runLoad, type LoadResult } from './load-run';
import { chaosSeed } from './chaos-support';

const DURATION_MS = 30_000;
const CHATS = 50;
const RATE = 10;
/** Measured: 0.5-0.6 MB for 200 messages after warm-up, flattening (about 3 KB a message, mostly one-time). */
const RETAINED_BYTES_PER_MESSAGE = 4 * 1024;
const HEAP_SLACK_MB = 1.5;

describe('load through the fake Bot API (chaos)', () => {
  it('answers every message once, in order per chat, with bounded heap growth', async () => {
    const seed = chaosSeed('load');
    const result: LoadResult = await runLoad({
      durationMs: DURATION_MS,
      chats: CHATS,
      rate: RATE,
      sleep: false,
      embedder: 'ollama',
      sampleEveryMs: 5_000,
      warmupMs: 10_000,
      seed,
      // eslint-disable-next-line no-console
      log: (line) => console.log(line),
    });
    const r = result.report;
    const forced = !result.gc.startsWith('none');
    const afterWarmup = r.sent - (result.samples.find((s) => s.atMs >= 10_000)?.stats.sent ?? 0);
    const allowedMb = HEAP_SLACK_MB + (afterWarmup * RETAINED_BYTES_PER_MESSAGE) / (1024 * 1024);
    const grownMb = result.after.heapMb - result.warmHeapMb;
    // eslint-disable-next-line no-console
    console.log(
      `load test figures\n${formatLoadResult(result)}\n  heap bound                          ${grownMb.toFixed(2)} MB grown for ${afterWarmup} messages after warm-up; allowed ${allowedMb.toFixed(2)} MB${forced ? '' : ' (x3: no forced GC)'}`,
    );

    expect(r.sent).toBeGreaterThanOrEqual(RATE * (DURATION_MS / 1000) * 0.9);
    expect(r.lost).toBe(0);
    expect(r.duplicated).toBe(0);
    expect(r.replies).toBe(r.sent);
    expect(r.orderViolations).toBe(0);
    expect(r.chatsInOrder).toBe(r.chats);
    // The order check meant something: chats did have messages in flight together.
    expect(r.overlapping).toBeGreaterThan(0);
    expect(Object.keys(r.other)).toEqual([]);
    expect(grownMb).toBeLessThanOrEqual(forced ? allowedMb : allowedMb * 3);
  }, 240_000);
});
