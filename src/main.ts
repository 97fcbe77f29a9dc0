/**
 * The composition root: `npm start`.
 *
 * Reads the configuration once, opens the database (applying pending migrations), starts what is
 * configured, and stops everything cleanly on Ctrl-C or SIGTERM. Invalid configuration prints
 * every problem and exits with status 2.
 */
import { ConfigError, loadConfig, type Config } from './config/load-config';
import { createCore } from './core';
import { AppError } from './shared/errors';
import { createLogger } from './shared/logger';
import { registerSecrets } from './shared/redact';
import { describeDatabase } from './storage/database';

/**
 * Resolves with the first termination signal received. Until then a timer keeps the process
 * alive even when nothing else (a channel, the scheduler) holds the event loop open. The
 * handlers stay installed while the service stops, so a repeated signal cannot cut the clean
 * shutdown short.
 */
function nextSignal(): Promise<NodeJS.Signals> {
  const keepAlive = setInterval(() => undefined, 1 << 30);
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) return;
      received = true;
      clearInterval(keepAlive);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

function loadOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n${error.hint ?? ''}\n`);
      process.exit(2);
    }
    throw error;
  }
}

async function main(): Promise<void> {
  const config = loadOrExit();
  registerSecrets(config.secrets);
  const logger = createLogger(config.log);
  const log = logger.child({ component: 'main' });
  const stopping = nextSignal();

  const core = await createCore(config, logger);
  core.embeddingWorker.start();
  if (config.sleep.enabled) core.scheduler.start();
  log.info('Nocturne is ready', {
    database: describeDatabase(config.database),
    migrationsApplied: core.db.appliedMigrations.length,
    embedder: core.embedder.name,
    vectors: config.vectors.store,
    timeZone: config.timeZone,
    model: `${core.llm.provider}:${core.llm.model}`,
    sleep: config.sleep.enabled ? `consolidation ${config.sleep.consolidateCron}, decay ${config.sleep.decayCron}, digests at ${config.sleep.digestTime}` : 'off',
  });

  const signal = await stopping;
  log.info('stopping', { signal });
  await core.close();
  log.info('stopped cleanly');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const appError = error instanceof AppError ? error : undefined;
    process.stderr.write(`Nocturne could not start: ${appError?.message ?? (error instanceof Error ? error.message : String(error))}\n`);
    if (appError?.hint) process.stderr.write(`${appError.hint}\n`);
    process.exit(1);
  },
);
