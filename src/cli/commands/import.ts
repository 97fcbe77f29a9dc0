/**
 * `import --scope S FILE.jsonl`: one episode per line. Invalid lines are reported with their
 * line numbers and never stop the rest; a second import of the same file skips everything
 * (idempotent on externalId). Exit status 0 when every line was imported or skipped, 1 when some
 * lines were invalid.
 */
import fs from 'node:fs';
import readline from 'node:readline';
import { ValidationError } from '../../shared/errors';
import type { NewEpisode } from '../../storage/episode-repository';
import { writeResult, type Command } from '../command';
import { createProgressBar } from '../progress';

const BATCH_SIZE = 500;
const MAX_REPORTED_INVALID = 100;

interface InvalidLine {
  readonly line: number;
  readonly error: string;
}

export const importCommand: Command = {
  name: 'import',
  usage: 'import [--scope S] FILE.jsonl [--channel C] [--json]',
  summary: 'import episodes from a JSON Lines file (one message per line)',
  options: { scope: { type: 'string' }, channel: { type: 'string' } },
  async run(ctx) {
    const file = ctx.positionals[0];
    if (!file) throw new ValidationError('import needs a file: npm run cli -- import --scope S FILE.jsonl', { code: 'cli.usage' });
    let size: number;
    try {
      size = fs.statSync(file).size;
    } catch {
      throw new ValidationError(`cannot read ${file}: no such file`, { code: 'cli.no_file' });
    }
    const defaultScope = ctx.values.scope as string | undefined;
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
    const progress = createProgressBar({ total: size, label: 'importing' });

    const flush = async () => {
      for (const [scope, episodes] of pending) {
        const result = await core.episodeService.ingestMany({ key: scope, channel: episodes[0]?.channel ?? defaultChannel }, episodes);
        imported += result.inserted;
        skipped += result.duplicates;
      }
      pending = new Map();
      pendingCount = 0;
    };
    const reject = (line: number, error: string) => {
      invalidCount += 1;
      if (invalid.length < MAX_REPORTED_INVALID) invalid.push({ line, error });
    };

    const stream = fs.createReadStream(file);
    stream.on('data', (chunk) => {
      bytesRead += chunk.length;
    });
    const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
    for await (const line of lines) {
      lineNo += 1;
      progress.update(bytesRead, `${imported + pendingCount} episodes`);
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
      const scope = value !== null && typeof value === 'object' && typeof (value as { scope?: unknown }).scope === 'string'
        ? ((value as { scope: string }).scope)
        : defaultScope;
      if (!scope) {
        reject(lineNo, 'no scope: give --scope or a "scope" field on the line');
        continue;
      }
      try {
        const episode = core.episodeService.normalize(value, defaultChannel);
        const list = pending.get(scope) ?? [];
        list.push(episode);
        pending.set(scope, list);
        pendingCount += 1;
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        reject(lineNo, error.message);
        continue;
      }
      if (pendingCount >= BATCH_SIZE) await flush();
    }
    await flush();
    progress.finish();

    const result = { file, imported, skipped, invalid: invalidCount, blankLines: blank, lines: lineNo, ms: Date.now() - started, invalidLines: invalid };
    const text = [
      ...invalid.map((entry) => `line ${entry.line}: ${entry.error}`),
      ...(invalidCount > invalid.length ? [`... and ${invalidCount - invalid.length} more invalid lines`] : []),
      `imported ${imported}, skipped ${skipped} (already stored), invalid ${invalidCount}${blank ? `, blank lines ${blank}` : ''} — ${lineNo} lines in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      ...(imported > 0 ? ['searchable by keyword now; vectors are added in the background by `npm start`, or now by `npm run cli -- reindex`'] : []),
    ].join('\n');
    writeResult(ctx, result, text);
    return invalidCount > 0 ? 1 : 0;
  },
};
