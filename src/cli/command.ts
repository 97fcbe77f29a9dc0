/**
 * What a CLI command is: a row of the command table (command-table.ts: a name, a usage line, its
 * options) and an implementation, loaded when the command runs, whose run function writes results
 * to `out` (stdout) and returns an exit code. Logs go to stderr through the logger.
 */
import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config/load-config';
import type { Core } from '../core';
import type { Logger } from '../shared/logger';

export interface CommandContext {
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: readonly string[];
  readonly json: boolean;
  /** This command's usage line from the command table, for the usage errors it raises itself. */
  readonly usage: string;
  readonly out: NodeJS.WritableStream;
  /** Opens the database and services on first use (doctor must be able to run without them). */
  core(): Promise<Core>;
  readonly config: Config;
  readonly logger: Logger;
}

/**
 * A row of the command table: what `--help` and the argument parser need, cheap to load, and how
 * to load the implementation, which is imported only when the command runs.
 */
export interface Command {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  readonly options: NonNullable<ParseArgsConfig['options']>;
  /**
   * True for a command that holds a conversation on the terminal: its screen shows the
   * conversation only, so its log lines go to the log file (LOG_FILE, or DATA_DIR/nocturne.log)
   * rather than stderr, as they do under `npm start` on a terminal.
   */
  readonly logsToFile?: boolean;
  load(): Promise<CommandRunner>;
}

/** A command's implementation: what its module exports for the command table to load. */
export interface CommandRunner {
  run(ctx: CommandContext): Promise<number>;
}

/** Writes a result: JSON (one document) with --json, text lines otherwise. */
export function writeResult(ctx: CommandContext, json: unknown, text: string): void {
  ctx.out.write(ctx.json ? `${JSON.stringify(json)}\n` : text.endsWith('\n') || text === '' ? text : `${text}\n`);
}
