/**
 * Prisma's query compiler, and the schema engine that applies migrations, are WebAssembly:
 * megabytes of it, compiled in every process that opens a store. V8 runs it on baseline code at
 * first and recompiles a function with its optimizing compiler once the function has run
 * "enough". With V8's default budget for that (1.8 million), the few queries of a start-up are
 * already enough: every short process (a CLI command, the service's start, a test opening a store)
 * spent about 0.3 s of CPU optimizing code it then hardly used. Twenty times that budget leaves a
 * start-up on baseline code, while a long run (an import, a service's day) still optimizes what it
 * runs most. Measured with `cli scopes` and an import of 20,000 lines (docs/architecture.md,
 * "Start-up"); a budget given to node on its command line is left as it is.
 */
import v8 from 'node:v8';

export const WASM_TIERING_BUDGET = 36_000_000;

let tuned = false;

/** Sets V8's tier-up budget for WebAssembly, once, before the first engine is compiled. */
export function tuneWasmTiering(): void {
  if (tuned) return;
  tuned = true;
  if (process.execArgv.some((arg) => arg.startsWith('--wasm-tiering-budget'))) return;
  v8.setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
}
