/**
 * The log file (LOG_FILE, or DATA_DIR/nocturne.log under the terminal conversation) as a stream
 * that never fails. A plain file stream emits 'error' when a write fails (a full disk: ENOSPC; a
 * lost permission: EACCES; a failing device: EIO; a folder that cannot be made), and nobody can
 * handle it usefully: the process died, and could not start again until the disk had room.
 * Logging is never a reason to stop the service, so here a failed write goes to stderr instead,
 * with one warning saying why, and the file is tried again on the first line after
 * `LOG_FILE_RETRY_MS`; when it takes lines again, a note in both says so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';

/** How long lines go to stderr after the file failed before the file is tried again. */
export const LOG_FILE_RETRY_MS = 5_000;

export interface LogFileOptions {
  /** Where lines go while the file cannot take them; stderr by default. */
  readonly fallback?: NodeJS.WritableStream;
  readonly retryMs?: number;
  /** Milliseconds now (tests move it). */
  readonly now?: () => number;
}

/** A JSON log line of the stream's own, in the fields winston's JSON lines have. */
function ownLine(level: 'warn' | 'info', message: string, fields: Record<string, unknown>): string {
  return `${JSON.stringify({ level, message, component: 'log-file', ...fields, timestamp: new Date().toISOString() })}\n`;
}

/** Writes all of `data` at the end of `fd`, continuing after short writes. */
function writeAll(fd: number, data: Buffer, done: (error: NodeJS.ErrnoException | null) => void): void {
  fs.write(fd, data, 0, data.length, null, (error, written) => {
    if (error) return done(error);
    if (written < data.length) return writeAll(fd, data.subarray(written), done);
    done(null);
  });
}

/**
 * Opens `file` for appending log lines (its folder is made when missing). Never emits 'error':
 * a line the file refuses is written to the fallback; the first refusal of an outage is explained
 * there once (the file, the error code, when it is tried again).
 */
export function openLogFile(file: string, options: LogFileOptions = {}): Writable {
  const fallback = options.fallback ?? process.stderr;
  const retryMs = options.retryMs ?? LOG_FILE_RETRY_MS;
  const now = options.now ?? Date.now;
  let fd: number | undefined;
  /** Set while the file fails: since when, the code, and when it is tried again. */
  let outage: { since: number; code: string; retryAt: number; lines: number } | undefined;

  const close = () => {
    if (fd === undefined) return;
    const closing = fd;
    fd = undefined;
    fs.close(closing, () => undefined);
  };

  const failed = (error: NodeJS.ErrnoException, chunk: Buffer) => {
    close();
    const code = error.code ?? error.name;
    if (outage === undefined) {
      outage = { since: now(), code, retryAt: 0, lines: 0 };
      fallback.write(ownLine('warn', 'the log file cannot be written; logs go to stderr until it can', { file, code, retryMs }));
    }
    outage.code = code;
    outage.retryAt = now() + retryMs;
    outage.lines++;
    fallback.write(chunk);
  };

  return new Writable({
    decodeStrings: true,
    write(chunk: Buffer, _encoding, callback) {
      if (outage !== undefined && now() < outage.retryAt) {
        outage.lines++;
        fallback.write(chunk);
        return callback();
      }
      if (fd === undefined) {
        try {
          fs.mkdirSync(path.dirname(file), { recursive: true });
          fd = fs.openSync(file, 'a');
        } catch (error) {
          failed(error as NodeJS.ErrnoException, chunk);
          return callback();
        }
      }
      // After an outage the file says what it missed before the line that follows the gap.
      const back = outage && { code: outage.code, stderrLines: outage.lines, forMs: now() - outage.since };
      const data = back ? Buffer.concat([Buffer.from(ownLine('info', 'the log file is written again; the lines between went to stderr', back)), chunk]) : chunk;
      writeAll(fd, data, (error) => {
        if (error) failed(error, chunk);
        else if (back) {
          outage = undefined;
          fallback.write(ownLine('info', 'the log file is written again', { file, ...back }));
        }
        callback();
      });
    },
    final(callback) {
      close();
      callback();
    },
    destroy(_error, callback) {
      close();
      callback(null);
    },
  });
}
