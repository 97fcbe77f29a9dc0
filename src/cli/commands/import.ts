/**
 * `import --scope S FILE.jsonl`: one episode per line. Invalid lines are reported with their
 * line numbers and never stop the rest; a second import of the same file skips everything
 * (idempotent on externalId; a line without one is given an identity of its own, see
 * {@link lineIdentity}). Exit status 0 when every line was imported or skipped, 1 when some
 * lines were invalid.
 *
 * Lines are read with bounded memory: a line longer than any valid episode can be (4 x
 * EPISODE_MAX_BYTES + 1 MiB, room for JSON escapes and metadata) is skipped as it streams by and
 * reported, never held in memory whole. A database failure (a full disk, a lock) stops the import
 * with the line it reached; the batches stored before stay, the failed one left nothing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { plural } from '../../shared/plural';
import { AppError, StorageError, ValidationError } from '../../shared/errors';
import { normalizeScopeKey } from '../../memory/scopes/scope-key';
import { ENCODED_LIMIT_RULE, formatBytes, maxEncodedEpisodeBytes } from '../../memory/episodes/episode-limits';
import type { NewEpisode } from '../../storage/episode-repository';
import { BUSY_RETRY_MAX_MS } from '../../storage/sqlite-lock-waits';
import { writeResult, type CommandRunner } from '../command';
import { createProgressBar } from '../progress';

/**
 * Lines per transaction. A running service's write waits for the batch being stored (about 200 ms
 * for 100 lines on a loaded 2-core machine), and a reply writes several times: 500-line batches
 * held the lock for up to a second each.
 */
const BATCH_SIZE = 100;
/**
 * The pause after each batch, with the lock free: longer than the pause of a writer waiting for
 * it, so that a running service's waiting write goes next instead of after several more batches
 * (one reply in five took 3.4-5.8 s beside a 20,000-line import of 500-line batches; see
 * test/chaos/sqlite-locks.test.ts).
 */
const BETWEEN_BATCHES_MS = 2 * BUSY_RETRY_MAX_MS;
const MAX_REPORTED_INVALID = 100;

interface InvalidLine {
  readonly line: number;
  readonly error: string;
}

/** One line of the file: its text, or only its size when it was too long to keep. */
interface FileLine {
  readonly text: string | null;
  readonly bytes: number;
}

/**
 * The lines of a stream (split at LF; a CR before it and a UTF-8 byte order mark at the start are
 * dropped), keeping at most `maxLineBytes` of any line: longer lines come back as their size only.
 */
export async function* boundedLines(input: AsyncIterable<Buffer>, maxLineBytes: number): AsyncGenerator<FileLine> {
  let parts: Buffer[] = [];
  let bytes = 0;
  let first = true;
  const finish = (): FileLine => {
    let line: FileLine;
    if (bytes > maxLineBytes) line = { text: null, bytes };
    else {
      let text = Buffer.concat(parts, bytes).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
      if (first && text.startsWith('\uFEFF')) text = text.slice(1);
      line = { text, bytes };
    }
    first = false;
    parts = [];
    bytes = 0;
    return line;
  };
  const keep = (piece: Buffer) => {
    bytes += piece.length;
    if (bytes <= maxLineBytes) parts.push(piece);
    else parts = [];
  };
  for await (const chunk of input) {
    let start = 0;
    for (let end = chunk.indexOf(10, start); end !== -1; end = chunk.indexOf(10, start)) {
      keep(chunk.subarray(start, end));
      yield finish();
      start = end + 1;
    }
    // Copied: the stream may reuse its chunk's memory.
    if (start < chunk.length) keep(Buffer.from(chunk.subarray(start)));
  }
  if (bytes > 0) yield finish();
}

/**
 * The external id of a line that has none: `jsonl:` and a hash of the file's first line, the
 * line's number and the line's text. A re-run of the same file (after a kill, a full disk, or on
 * a renamed copy, or the file with lines appended) finds every line already stored, so it resumes
 * without duplicates; two equal lines of one file stay two messages (their numbers differ). Not
 * the same line: an edited line, or a line whose number moved (lines inserted above it).
 */
export function lineIdentity(fileHead: string, lineNo: number, line: string): string {
  return `jsonl:${createHash('sha256').update(`${fileHead}\n${lineNo}\n${line}`).digest('hex').slice(0, 40)}`;
}

/**
 * The scope of a parsed line: its own `scope` (a non-empty string), else --scope; `"scope": ""`
 * and `null` count as absent. A string error explains a line that has none.
 */
function lineScope(value: unknown, defaultScope: string | undefined): { scope: string } | { error: string } {
  const given = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as { scope?: unknown }).scope : undefined;
  if (given !== undefined && given !== null && typeof given !== 'string')
    return { error: `scope must be a string (a scope key such as "telegram:private:42"), not ${Array.isArray(given) ? 'an array' : typeof given}` };
  if (typeof given === 'string' && given !== '') return { scope: given };
  if (defaultScope) return { scope: defaultScope };
  return { error: given === '' ? 'no scope: the line\'s "scope" is empty and no --scope was given' : 'no scope: give --scope or a "scope" field on the line' };
}

export const importCommand: CommandRunner = {
  async run(ctx) {
    const file = ctx.positionals[0];
    if (!file) throw new ValidationError('import needs a file: npm run cli -- import --scope S FILE.jsonl', { code: 'cli.usage' });
    let size: number;
    try {
      size = fs.statSync(file).size;
    } catch {
      throw new ValidationError(`cannot read ${file}: no such file`, { code: 'cli.no_file' });
    }
    const given = ctx.values.scope as string | undefined;
    // A bad --scope is bad usage (exit 2, nothing read); a line's own bad scope rejects that line.
    const defaultScope = given === undefined ? undefined : normalizeScopeKey(given, 'cli.usage');
    const defaultChannel = (ctx.values.channel as string | undefined) ?? 'import';
    const core = await ctx.core();
    const started = Date.now();

    const invalid: InvalidLine[] = [];
    let invalidCount = 0;
    let imported = 0;
    let skipped = 0;
    let blank = 0;
    let lineNo = 0;
    let bytesRead = 0;
    let pending = new Map<string, NewEpisode[]>();
    let pendingCount = 0;
    /** The last line of the last batch stored. */
    let storedThrough = 0;
    /** Scope keys found valid (a bad key on one line must not fail the batch of the others). */
    const validScopes = new Map<string, string>();
    const progress = createProgressBar({ total: size, label: 'importing' });

    const flush = async () => {
      for (const [scope, episodes] of pending) {
        const result = await core.episodeService.ingestMany({ key: scope, channel: episodes[0]?.channel ?? defaultChannel }, episodes);
        imported += result.inserted;
        skipped += result.duplicates;
      }
      pending = new Map();
      pendingCount = 0;
      storedThrough = lineNo;
      await sleep(BETWEEN_BATCHES_MS);
    };
    const reject = (line: number, error: string) => {
      invalidCount += 1;
      if (invalid.length < MAX_REPORTED_INVALID) invalid.push({ line, error });
    };

    // A line may hold content of EPISODE_MAX_BYTES written with JSON escapes, and metadata;
    // anything longer cannot be valid (the same bound as an export's rows).
    const maxLineBytes = maxEncodedEpisodeBytes(ctx.config.ingest);
    const stream = fs.createReadStream(file);
    stream.on('data', (chunk) => {
      bytesRead += chunk.length;
    });
    const stopped = (error: unknown): unknown => {
      if (!(error instanceof AppError) || error.category === 'user') return error;
      return new StorageError(
        `${error.message} The import stopped at line ${lineNo}: ${imported === 1 ? 'the episode' : `the ${plural(imported, 'episode')}`} imported before ${imported === 1 ? 'stays' : 'stay'} stored; the lines of the failed batch (after line ${storedThrough}) were not stored, and the rest of the file was not read.`,
        {
          code: error.code,
          cause: error,
          hint: `${error.hint ? `${error.hint} ` : ''}Run the same import again afterwards: the lines already stored are skipped (lines without an externalId are recognized by their place and text in the file).`,
        },
      );
    };
    /** What names this file in the identity of its lines without externalId: its first line. */
    let fileHead = '';
    for await (const { text: line, bytes } of boundedLines(stream, maxLineBytes)) {
      lineNo += 1;
      if (lineNo === 1)
        fileHead = createHash('sha256')
          .update(line ?? `(a line of ${bytes} bytes)`)
          .digest('hex');
      progress.update(bytesRead, plural(imported + pendingCount, 'episode'));
      if (line === null) {
        reject(
          lineNo,
          `the line is ${formatBytes(bytes)}, longer than any valid episode can be (${formatBytes(maxLineBytes)}: ${ENCODED_LIMIT_RULE}); skipped without reading it`,
        );
        continue;
      }
      if (line.trim() === '') {
        blank += 1;
        continue;
      }
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        reject(lineNo, `not valid JSON (${(error as Error).message.slice(0, 120)})`);
        continue;
      }
      const found = lineScope(value, defaultScope);
      if ('error' in found) {
        reject(lineNo, found.error);
        continue;
      }
      try {
        let scope = validScopes.get(found.scope);
        if (scope === undefined) {
          scope = normalizeScopeKey(found.scope);
          validScopes.set(found.scope, scope);
        }
        const normalized = core.episodeService.normalize(value, defaultChannel, { checkTime: true });
        const episode = normalized.externalId === null ? { ...normalized, externalId: lineIdentity(fileHead, lineNo, line) } : normalized;
        const list = pending.get(scope) ?? [];
        list.push(episode);
        pending.set(scope, list);
        pendingCount += 1;
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        reject(lineNo, error.message);
        continue;
      }
      if (pendingCount >= BATCH_SIZE) await flush().catch((error: unknown) => Promise.reject(stopped(error)));
    }
    await flush().catch((error: unknown) => Promise.reject(stopped(error)));
    progress.finish();

    const result = { file, imported, skipped, invalid: invalidCount, blankLines: blank, lines: lineNo, ms: Date.now() - started, invalidLines: invalid };
    const text = [
      ...invalid.map((entry) => `line ${entry.line}: ${entry.error}`),
      ...(invalidCount > invalid.length ? [`... and ${invalidCount - invalid.length} more invalid lines`] : []),
      `imported ${imported}, skipped ${skipped} (already stored), invalid ${invalidCount}${blank ? `, blank lines ${blank}` : ''} — ${plural(lineNo, 'line')} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      ...(imported > 0 ? ['searchable by keyword now; vectors are added in the background by `npm start`, or now by `npm run cli -- reindex`'] : []),
    ].join('\n');
    writeResult(ctx, result, text);
    return invalidCount > 0 ? 1 : 0;
  },
};
