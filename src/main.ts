/**
 * The composition root: `npm start`.
 *
 * Reads the configuration once, opens the database (applying pending migrations), starts what is
 * configured (src/service.ts), and stops everything cleanly on Ctrl-C, SIGTERM, or when the
 * terminal conversation is left. Invalid configuration prints
 * every problem and exits with status 2.
 */
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from './config/load-config';
import { startService, STOP_WATCHDOG_MS, wantsTerminal } from './service';
import { AppError } from './shared/errors';
import { openLogFile } from './shared/log-file';
import { createLogger } from './shared/logger';
import { registerSecrets, setLogPseudonymKey } from './shared/redact';
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

/** Logs go to LOG_FILE, or to DATA_DIR/nocturne.log while the terminal conversation has the screen. */
function logDestination(config: Config, terminal: boolean): string | undefined {
  if (config.log.file) return config.log.file;
  return terminal && process.stderr.isTTY === true ? path.join(config.dataDir, 'nocturne.log') : undefined;
}

async function main(): Promise<void> {
  const config = loadOrExit();
  registerSecrets(config.secrets);
  // Under encryption at rest, logs name people and chats by keyed pseudonyms (docs/reliability.md).
  setLogPseudonymKey(config.database.provider === 'sqlite' ? config.database.encryptionKey : undefined);
  const logFile = logDestination(config, wantsTerminal(config, process.stdin));
  const io = { input: process.stdin, output: process.stdout, ...(logFile ? { logFile } : {}) };
  // A log file that cannot be written (full disk, permissions) sends its lines to stderr instead.
  const logStream = logFile ? openLogFile(logFile) : undefined;
  const logger = createLogger({ ...config.log, ...(logStream ? { stream: logStream } : {}) });
  const log = logger.child({ component: 'main' });
  const signal = nextSignal();

  const service = await startService(config, logger, io);
  log.info('Nocturne is ready', {
    database: describeDatabase(config.database),
    migrationsApplied: service.core.db.appliedMigrations.length,
    embedder: service.core.embedder.name,
    vectors: config.vectors.store,
    timeZone: config.timeZone,
    model: `${service.core.llm.provider}:${service.core.llm.model}`,
    ...service.parts,
    sleep: config.sleep.enabled
      ? `consolidation ${config.sleep.consolidateCron}, decay ${config.sleep.decayCron}, digests at ${config.sleep.digestTime}`
      : 'off',
    ...(logFile ? { logFile } : {}),
  });

  const reason = await Promise.race([signal, service.ended]);
  log.info('stopping', { reason });
  // The stop is bounded (service.ts); should something still hold the process past 10 s (a
  // synchronous call that never returns to the event loop cannot be helped), it exits anyway.
  setTimeout(() => {
    log.error(`abandoned on stop: the stop did not complete within ${STOP_WATCHDOG_MS / 1000} s; exiting`);
    process.exit(1);
  }, STOP_WATCHDOG_MS).unref();
  await service.stop();
  log.info('stopped cleanly');
  if (logStream) await new Promise<void>((resolve) => logStream.end(resolve));
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
