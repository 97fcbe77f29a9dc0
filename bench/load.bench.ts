/**
 * Sustained load through Telegram: many chats sending a steady stream of messages to the composed
 * service (src/service.ts, in this process) through the fake Bot API, for several minutes. Every
 * 10 s: messages sent and answered, reply latency (p50/p95 of the last 10 s), RSS and V8 heap
 * after a forced garbage collection. At the end: every message answered exactly once, each chat's
 * replies in the order of its messages, and the figures table (see docs/channels.md, "Load").
 *
 *   npx tsx bench/load.bench.ts [--minutes 3] [--chats 200] [--rate 10] [--sleep on|off] [--embedder local|ollama] [--seed N]
 *
 * Forced GC: run with `node --expose-gc --import tsx bench/load.bench.ts ...` for `global.gc`;
 * without it the bench turns the flag on at run time (`v8.setFlagsFromString('--expose-gc')`),
 * which works on Node 20, and says which it used. Exit status 1 when a message was lost,
 * duplicated or answered out of order.
 */
import { formatLoadResult, runLoad, type LoadOptions } from '../test/chaos/load-run';

function argument(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at !== -1 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback;
}

async function main(): Promise<void> {
  const minutes = Number(argument('minutes', '3'));
  const options: LoadOptions = {
    durationMs: Math.round(minutes * 60_000),
    chats: Number(argument('chats', '200')),
    rate: Number(argument('rate', '10')),
    sleep: argument('sleep', 'on') !== 'off',
    embedder: argument('embedder', 'local') === 'ollama' ? 'ollama' : 'local',
    sampleEveryMs: 10_000,
    warmupMs: Math.min(30_000, Math.round(minutes * 60_000 * 0.2)),
    seed: Number(argument('seed', String(Date.now() % 1_000_000))),
    log: (line) => console.log(line),
  };
  for (const [name, value] of Object.entries({ minutes, chats: options.chats, rate: options.rate })) {
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  }
  console.log(`load bench: seed ${options.seed}`);
  const result = await runLoad(options);
  const r = result.report;
  console.log('\nload bench figures');
  console.log(formatLoadResult(result));
  const ok = r.lost === 0 && r.duplicated === 0 && r.orderViolations === 0;
  console.log(ok ? '\nOK: every message answered once, in order per chat' : '\nFAILED: messages lost, duplicated or out of order');
  process.exitCode = ok ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
