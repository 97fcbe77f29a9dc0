/**
 * Throughput of secret redaction (src/shared/redact.ts) on a 4 KB chat message, the size of a
 * long pasted turn: `npm run -s bench:redact`. Three messages: plain prose (the common case, no
 * secret), prose with one key in it, and prose with invisible characters and percent escapes
 * (read twice, as written and normalized). Each is redacted for a fixed CPU time after a
 * warm-up; the figures are CPU microseconds per message and MB/s.
 */
import { redactSecrets, registerSecrets } from '../src/shared/redact';

const MESSAGE_BYTES = 4096;
const WARMUP_MS = 500;
const MEASURE_MS = 2_000;
const PROSE = 'We met at the harbour on Tuesday and talked about the trip to Lisbon, the new job at the clinic, and whether Ana should take the early train. ';

function fill(tail: string): string {
  const head = PROSE.repeat(Math.ceil(MESSAGE_BYTES / PROSE.length));
  return `${head.slice(0, MESSAGE_BYTES - tail.length)}${tail}`;
}

const messages: Record<string, string> = {
  'plain prose': fill(''),
  'prose + one key': fill(` my key is sk-ant-api03-${'Q7x_zR2k9LmN'.repeat(8)}AA thanks`),
  'prose + escapes and zero-width': fill(' see https://example.com/a?b%3Dc%20d and a\u200Bb\u200Bc'),
};

/** CPU milliseconds of this process (the machine is shared: wall time would count other work). */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Milliseconds of CPU per redaction of `text`. */
function measure(text: string): number {
  for (const until = cpuMs() + WARMUP_MS; cpuMs() < until; ) redactSecrets(text);
  let runs = 0;
  const started = cpuMs();
  while (cpuMs() - started < MEASURE_MS) {
    redactSecrets(text);
    runs++;
  }
  return (cpuMs() - started) / runs;
}

registerSecrets(['adm-bench-0123456789abcdef', 'whk-bench-0123456789abcdef', '123456789:AAbench_0123456789abcdefghijklmnopq']);
for (const [name, text] of Object.entries(messages)) {
  const ms = measure(text);
  // eslint-disable-next-line no-console
  console.log(`${name.padEnd(32)} ${(ms * 1000).toFixed(1).padStart(8)} us/message  ${(text.length / 1e6 / (ms / 1000)).toFixed(1).padStart(6)} MB/s`);
}
