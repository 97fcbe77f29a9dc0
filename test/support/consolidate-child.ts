/**
 * Child process for crash tests: opens the service core from the environment (like npm start)
 * with the deterministic test embedder and consolidates one scope, printing `started` first and
 * the outcome last. Tests kill it with SIGKILL at random moments.
 */
import { loadConfig } from '../../src/config/load-config';
import { createCore } from '../../src/core';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import { createSilentLogger } from '../../src/shared/logger';

async function main(): Promise<void> {
  const core = await createCore(loadConfig({ envFile: false }), createSilentLogger(), { embedder: createHashEmbedder({ dimension: 256 }) });
  const scope = await core.scopes.findByKey(process.argv[2]!);
  if (!scope) throw new Error(`no scope ${process.argv[2]}`);
  process.stdout.write('started\n');
  const outcome = await core.scheduler.consolidateNow(scope.id);
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
  await core.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);
