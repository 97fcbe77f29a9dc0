/**
 * Logging: winston, readable lines on a terminal and JSON lines otherwise, one child logger per
 * component, and every line redacted of secrets before it is written.
 *
 * Logs go to stderr so that CLI commands can keep stdout for their results.
 */
import winston from 'winston';
import { pseudonymizeField, redactField } from './redact';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/** The logging surface the rest of the code depends on (winston's Logger satisfies it). */
export interface Logger {
  error(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  debug(message: string, meta?: Record<string, unknown>): void;
  /** A logger whose lines carry `component` (and any other fields given). */
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level: LogLevel;
  /** `pretty` for people, `json` for machines; `auto` picks pretty when stderr is a terminal. */
  format: 'auto' | 'pretty' | 'json';
  /** Where lines go; stderr by default. Tests pass a stream to read them back. */
  stream?: NodeJS.WritableStream;
}

const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    // `message` is a string key winston keeps as is; pseudonyms (when on) apply to it too.
    info[key] = redactField(key, pseudonymizeField(key, info[key]));
  }
  return info;
});

const errorFormat = winston.format((info) => {
  if (info.error instanceof Error) {
    const err = info.error as Error & { code?: string };
    info.error = { name: err.name, message: err.message, code: err.code };
  }
  return info;
});

const prettyLine = winston.format.printf((info) => {
  const { level, message, timestamp, component, ...rest } = info;
  const fields = Object.entries(rest)
    .filter(([key]) => typeof key === 'string' && key !== 'splat')
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const where = component ? ` [${String(component)}]` : '';
  return `${String(timestamp)} ${level}${where} ${String(message)}${fields ? ` ${fields}` : ''}`;
});

/** Creates the root logger; call once in the composition root (or a CLI entry point). */
export function createLogger(options: LoggerOptions): Logger {
  const stream = options.stream ?? process.stderr;
  const pretty = options.format === 'pretty' || (options.format === 'auto' && (stream as NodeJS.WriteStream).isTTY === true);
  const format = pretty
    ? winston.format.combine(errorFormat(), redactFormat(), winston.format.timestamp({ format: 'HH:mm:ss.SSS' }), winston.format.colorize(), prettyLine)
    : winston.format.combine(errorFormat(), redactFormat(), winston.format.timestamp(), winston.format.json());
  return winston.createLogger({
    level: options.level,
    format,
    transports: [new winston.transports.Stream({ stream })],
  }) as unknown as Logger;
}

/** A logger that drops everything; for tests and library use without logging. */
export function createSilentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console({ silent: true })] }) as unknown as Logger;
}
