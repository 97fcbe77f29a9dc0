/**
 * `npm run cli -- <command> [options]`: Nocturne's command line. Results go to stdout (JSON
 * with --json), logs to stderr. Exit status: 0 success, 1 failure, 2 bad usage or configuration.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/load-config';
import type { Core } from '../core';
import { AppError } from '../shared/errors';
import { openLogFile } from '../shared/log-file';
import { createLogger } from '../shared/logger';
import { redactSecrets, registerSecrets, setLogPseudonymKey } from '../shared/redact';
import { explainStorageFailure } from '../storage/storage-errors';
import { asSentence } from '../shared/sentence';
import { COMMANDS as commands } from './command-table';

function usage(): string {
  return [
    'usage: npm run cli -- <command> [options]',
    '',
    ...commands.map((command) => `  ${command.usage.padEnd(58)} ${command.summary}`),
    '',
    'Every command takes --json for machine-readable output. Settings come from the environment and .env (see README).',
  ].join('\n');
}

export async function runCli(argv: readonly string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    out.write(`${usage()}\n`);
    return name ? 0 : 2;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) {
    process.stderr.write(`Unknown command "${name}"\n\n${usage()}\n`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: [...rest],
      options: { ...command.options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    process.stderr.write(`${asSentence((error as Error).message)}\nusage: npm run cli -- ${command.usage}\n`);
    return 2;
  }
  if (parsed.values.help) {
    out.write(`usage: npm run cli -- ${command.usage}\n  ${command.summary}\n`);
    return 0;
  }

  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${asSentence(error.message)}\n${error.hint ?? ''}\n`);
      return 2;
    }
    throw error;
  }
  registerSecrets(config.secrets);
  // Under encryption at rest, logs name people and chats by keyed pseudonyms (docs/reliability.md).
  setLogPseudonymKey(config.database.provider === 'sqlite' ? config.database.encryptionKey : undefined);
  // A conversation's screen is the conversation: its log lines go to the file (which falls back
  // to stderr only when it cannot be written).
  const logStream = command.logsToFile ? openLogFile(config.log.file ?? path.join(config.dataDir, 'nocturne.log')) : undefined;
  const logger = createLogger({ level: config.log.level, format: config.log.format, ...(logStream ? { stream: logStream } : {}) });
  let core: Promise<Core> | undefined;
  try {
    const implementation = await command.load();
    return await implementation.run({
      values: parsed.values as Record<string, string | boolean | undefined>,
      positionals: parsed.positionals,
      json: parsed.values.json === true,
      usage: command.usage,
      out,
      config,
      logger,
      // The core's modules (the store, the retrieval stack, the model adapters) are loaded, and the
      // core built, on first use only: a command that does not open the store does not pay for them.
      core: () => (core ??= import('../core').then(({ createCore }) => createCore(config, logger))),
    });
  } catch (error) {
    // A full disk, a database locked by another process or a read-only file say what to do.
    const appError = error instanceof AppError ? error : explainStorageFailure(error, config.database);
    const message = asSentence(redactSecrets(appError?.message ?? (error instanceof Error ? error.message : String(error))));
    if (parsed.values.json) out.write(`${JSON.stringify({ error: { code: appError?.code ?? 'internal', message, hint: appError?.hint } })}\n`);
    process.stderr.write(`error: ${message}\n${appError?.hint ? `${appError.hint}\n` : ''}`);
    return appError?.category === 'user' ? 2 : 1;
  } finally {
    if (core) await (await core.catch(() => undefined))?.close();
    if (logStream) await new Promise<void>((resolve) => logStream.end(resolve));
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    // Exit only once stdout has drained: a large --json result to a pipe is written asynchronously.
    (code) => process.stdout.write('', () => process.exit(code)),
    (error: unknown) => {
      process.stderr.write(`error: ${redactSecrets(error instanceof Error ? (error.stack ?? error.message) : String(error))}\n`);
      process.exit(1);
    },
  );
}
