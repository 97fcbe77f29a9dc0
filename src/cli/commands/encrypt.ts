/**
 * `encrypt`: encryption at rest for a store that already exists (docs/storage.md). A new store
 * is encrypted from its first write when DATABASE_ENCRYPTION_KEY is set; one written before the
 * key was set is encrypted here, once, with Nocturne stopped. `--rekey` changes the passphrase
 * (the new one is read from standard input, so it stays out of the shell history and the process
 * list); `--decrypt` writes the files back in plain text.
 *
 * Every file is checked before any is changed, so a wrong key or a file in use stops the command
 * with nothing rewritten.
 */
import { once } from 'node:events';
import readline from 'node:readline';
import Database from 'better-sqlite3';
import { ValidationError } from '../../shared/errors';
import { registerSecrets } from '../../shared/redact';
import { rekeySqliteFile, sqliteFileState, unlockSqlite, type RekeyOutcome } from '../../storage/sqlite-encryption';
import { writeResult, type CommandRunner, type CommandContext } from '../command';

const MIN_KEY_LENGTH = 16;

/** The SQLite files Nocturne keeps under the configuration: the database and the sqlite-vec index. */
function storeFiles(ctx: CommandContext): string[] {
  const files: string[] = [];
  if (ctx.config.database.provider === 'sqlite') files.push(ctx.config.database.file);
  if (ctx.config.vectors.store === 'sqlite-vec') files.push(ctx.config.vectors.file);
  return files;
}

async function readNewKey(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('new passphrase (at least 16 characters), then Enter: ');
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  const first = new Promise<string | undefined>((resolve) => {
    lines.once('line', resolve);
    void once(lines, 'close').then(() => resolve(undefined));
  });
  const key = await first;
  lines.close();
  if (key === undefined || key.length < MIN_KEY_LENGTH) {
    throw new ValidationError(`the new passphrase must be at least ${MIN_KEY_LENGTH} characters, on the first line of standard input`, {
      code: 'encrypt.invalid_key',
    });
  }
  registerSecrets([key]);
  return key;
}

/** Throws the storage error of the first file that `key` does not open (nothing is changed). */
function checkOpens(file: string, key: string | undefined): void {
  if (sqliteFileState(file) === 'absent') return;
  const connection = new Database(file, { fileMustExist: true });
  try {
    unlockSqlite(connection, file, sqliteFileState(file) === 'plain' ? undefined : key);
  } finally {
    connection.close();
  }
}

export const encryptCommand: CommandRunner = {
  async run(ctx) {
    const current =
      ctx.config.database.provider === 'sqlite'
        ? ctx.config.database.encryptionKey
        : ctx.config.vectors.store === 'sqlite-vec'
          ? ctx.config.vectors.encryptionKey
          : undefined;
    if (ctx.values.rekey && ctx.values.decrypt) throw new ValidationError('--rekey and --decrypt exclude each other', { code: 'encrypt.usage' });
    if (current === undefined) {
      throw new ValidationError(
        'DATABASE_ENCRYPTION_KEY is not set: set it to the passphrase to encrypt with (or that the store is encrypted with, for --rekey and --decrypt)',
        { code: 'encrypt.no_key' },
      );
    }
    const files = storeFiles(ctx);
    if (files.length === 0)
      throw new ValidationError('nothing to encrypt: the store is PostgreSQL and Qdrant (use their servers\u2019 encryption at rest)', {
        code: 'encrypt.nothing',
      });
    const to = ctx.values.decrypt ? undefined : ctx.values.rekey ? await readNewKey() : current;
    for (const file of files) checkOpens(file, current);
    const outcomes: Array<{ file: string; outcome: RekeyOutcome }> = [];
    for (const file of files) {
      const state = sqliteFileState(file);
      outcomes.push({ file, outcome: rekeySqliteFile({ file, from: state === 'encrypted' ? current : undefined, to }) });
    }
    const lines = outcomes.map(
      ({ file, outcome }) =>
        `${file}: ${outcome === 'absent' ? 'not created yet (it will be encrypted from its first write)' : outcome === 'unchanged' ? (to === undefined ? 'already plain' : 'already encrypted with this key') : outcome}`,
    );
    if (ctx.values.rekey) lines.push('Now set DATABASE_ENCRYPTION_KEY to the new passphrase: the old one no longer opens the store.');
    if (ctx.values.decrypt) lines.push('Now unset DATABASE_ENCRYPTION_KEY: the store is plain text again.');
    writeResult(ctx, { files: outcomes }, lines.join('\n'));
    return 0;
  },
};
