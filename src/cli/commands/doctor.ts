/**
 * `doctor`: checks the configuration, the database and its migrations, the full-text index, and
 * that the configured outside services answer; prints what to fix for each failure. Exit status
 * 1 when a check the service needs failed; unreachable optional services are warnings.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeDatabase } from '../../storage/database';
import { readMigrations, searchIndexScript } from '../../storage/migrations/migration-runner';
import { writeResult, type CommandRunner, type CommandContext } from '../command';
import { plural } from '../../shared/plural';

/** Rows set aside that doctor names; the rest are counted. */
const SET_ASIDE_LISTED = 5;

type Status = 'ok' | 'warn' | 'fail';

interface Check {
  readonly name: string;
  readonly status: Status;
  readonly detail: string;
  readonly fix?: string;
}

const SEARCH_TRIGGERS: Record<'sqlite' | 'postgres', string[]> = {
  sqlite: [
    'episode_search_insert_v3',
    'episode_search_update_v3',
    'episode_search_delete_v3',
    'memory_search_insert_v3',
    'memory_search_update_v3',
    'memory_search_delete_v3',
    'scope_search_delete',
  ],
  postgres: ['episode_search_sync', 'memory_search_sync', 'scope_search_delete'],
};

async function reachable(url: string, init: RequestInit = {}): Promise<{ ok: boolean; detail: string }> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5_000) });
    return { ok: response.ok, detail: `HTTP ${response.status}` };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { ok: false, detail: cause ?? (error as Error).name };
  }
}

async function storageChecks(ctx: CommandContext): Promise<Check[]> {
  const { config } = ctx;
  const checks: Check[] = [];
  if (config.database.provider === 'sqlite') {
    const dir = path.dirname(config.database.file);
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.accessSync(dir, fs.constants.W_OK);
      checks.push({ name: 'data directory', status: 'ok', detail: dir });
    } catch {
      checks.push({
        name: 'data directory',
        status: 'fail',
        detail: `${dir} is not writable`,
        fix: 'Set DATA_DIR to a folder this user can write, or fix its permissions.',
      });
      return checks;
    }
  }
  let core;
  try {
    core = await ctx.core();
  } catch (error) {
    const hint = (error as { hint?: string }).hint;
    checks.push({ name: 'database', status: 'fail', detail: (error as Error).message, fix: hint ?? 'Check DB_PROVIDER and DATABASE_URL.' });
    return checks;
  }
  const { provider } = config.database;
  const committed = readMigrations(provider).migrationDirectories.length;
  const justNow = core.storeStats.migrationsAppliedAtOpen.length;
  checks.push({
    name: 'database',
    status: 'ok',
    detail: `${describeDatabase(config.database)}; ${plural(committed, 'migration')}, all applied${justNow ? ` (${justNow} just now)` : ''}`,
  });
  const expected = SEARCH_TRIGGERS[provider];
  const present = new Set(await core.storeStats.triggers());
  const missing = expected.filter((name) => !present.has(name));
  checks.push(
    missing.length === 0
      ? { name: 'full-text index', status: 'ok', detail: `${expected.length} sync triggers in place` }
      : {
          name: 'full-text index',
          status: 'fail',
          detail: `missing triggers: ${missing.join(', ')}`,
          fix: `Re-apply ${searchIndexScript(provider)} to the database (it is idempotent).`,
        },
  );
  // Rows the embedder kept refusing left its queue (so the others go on); said here so they are
  // not forgotten. Reported only when there are some: most stores never have one.
  const aside = await core.embeddingWorker.setAside(SET_ASIDE_LISTED);
  if (aside.count > 0) {
    const listed = aside.rows.map((row) => `${row.kind} ${row.id} (scope ${row.scopeId})`).join(', ');
    checks.push({
      name: 'embeddings',
      status: 'warn',
      detail: `${plural(aside.count, 'row')} the embedder could not embed ${aside.count === 1 ? 'was' : 'were'} set aside (found by keywords only): ${listed}${aside.count > aside.rows.length ? ', ...' : ''}`,
      fix: 'The log line "a row cannot be embedded" gives the embedder\'s error code; `npm run cli -- reindex` tries them again (after changing the embedder or its model, say).',
    });
  }
  if (provider === 'postgres' && missing.length === 0 && !(await core.storeStats.foldsAccents())) {
    checks.push({
      name: 'full-text accents',
      status: 'warn',
      detail: 'the unaccent extension is not installed: "creme" does not find "crème"',
      fix: `Install PostgreSQL's contrib package (it holds unaccent) and re-apply ${searchIndexScript(provider)}; rows indexed before keep their accents until they change.`,
    });
  }
  return checks;
}

async function serviceChecks(ctx: CommandContext): Promise<Check[]> {
  const { config } = ctx;
  const checks: Check[] = [];
  const ollamaUsers = [config.embedder.kind === 'ollama' ? 'embeddings' : '', config.llm.provider === 'ollama' ? 'chat' : ''].filter(Boolean);
  if (ollamaUsers.length > 0) {
    const result = await reachable(new URL('/api/version', config.embedder.ollamaHost).toString());
    checks.push(
      result.ok
        ? { name: `ollama (${ollamaUsers.join(', ')})`, status: 'ok', detail: config.embedder.ollamaHost }
        : {
            name: `ollama (${ollamaUsers.join(', ')})`,
            status: 'warn',
            detail: `${config.embedder.ollamaHost} did not answer (${result.detail})`,
            fix: 'Start Ollama (`ollama serve`), set OLLAMA_HOST, or set ANTHROPIC_API_KEY to use Anthropic.',
          },
    );
  }
  if (config.llm.provider === 'anthropic') {
    const base = config.llm.anthropicBaseUrl ?? 'https://api.anthropic.com';
    const result = await reachable(new URL('/v1/models', base).toString(), {
      headers: { 'x-api-key': config.llm.anthropicApiKey ?? '', 'anthropic-version': '2023-06-01' },
    });
    checks.push(
      result.ok
        ? { name: 'anthropic', status: 'ok', detail: `${base} (model ${config.llm.model})` }
        : {
            name: 'anthropic',
            status: 'warn',
            detail: `${base} refused or did not answer (${result.detail})`,
            fix: 'Check ANTHROPIC_API_KEY and the network; ANTHROPIC_BASE_URL for a proxy.',
          },
    );
  }
  if (config.telegram) {
    const result = await reachable(`${config.telegram.apiRoot}/bot${config.telegram.token}/getMe`);
    checks.push(
      result.ok
        ? { name: 'telegram', status: 'ok', detail: `${config.telegram.apiRoot} accepted the bot token` }
        : {
            name: 'telegram',
            status: 'warn',
            detail: `${config.telegram.apiRoot} refused the token or did not answer (${result.detail})`,
            fix: 'Check TELEGRAM_BOT_TOKEN (from @BotFather) and TELEGRAM_API_ROOT.',
          },
    );
  }
  if (config.vectors.store === 'qdrant') {
    const result = await reachable(config.vectors.url, config.vectors.apiKey ? { headers: { 'api-key': config.vectors.apiKey } } : {});
    checks.push(
      result.ok
        ? { name: 'qdrant', status: 'ok', detail: config.vectors.url }
        : {
            name: 'qdrant',
            status: 'warn',
            detail: `${config.vectors.url} did not answer (${result.detail})`,
            fix: 'Start Qdrant or check QDRANT_URL / QDRANT_API_KEY.',
          },
    );
  }
  return checks;
}

export const doctorCommand: CommandRunner = {
  async run(ctx) {
    const checks: Check[] = [
      {
        name: 'configuration',
        status: 'ok',
        detail: `DB_PROVIDER=${ctx.config.database.provider}, DATA_DIR=${ctx.config.dataDir}, LLM_PROVIDER=${ctx.config.llm.provider}`,
      },
      ...(await storageChecks(ctx)),
      ...(await serviceChecks(ctx)),
    ];
    const failed = checks.some((check) => check.status === 'fail');
    const mark: Record<Status, string> = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };
    writeResult(
      ctx,
      { ok: !failed, checks },
      [
        ...checks.map((c) => `${mark[c.status]}  ${c.name}: ${c.detail}${c.fix ? `\n      fix: ${c.fix}` : ''}`),
        failed ? 'Some checks failed.' : 'All required checks passed.',
      ].join('\n'),
    );
    return failed ? 1 : 0;
  },
};
