/** A real logger writing JSON lines into memory, so tests can read what was logged. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/shared/logger';

export function memoryLogger(): { logger: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  return {
    logger: createLogger({ level: 'debug', format: 'json', stream }),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((line) => line.length > 0),
  };
}
