/**
 * What an entry point loads before it does its work (docs/architecture.md, "Start-up"), read from
 * the real processes (`npm run cli`, `npm start`: node on dist/) through a preload that lists every
 * file they required (test/support/loaded-modules-preload.js). A module of src/ is named by its
 * path under src/ without extension (`cli/commands/scopes`), whether it ran as src/x.ts or dist/x.js:
 *
 * - `--help` and a command's `--help` load the command table, not the commands or the core;
 * - `scopes` on SQLite loads the core and its own command only: not the other commands, not the
 *   Anthropic SDK (the model is built, not called), the Qdrant client, node-postgres, grammY,
 *   fastify, the MCP SDK, the PDF reader nor the archive's import;
 * - `npm start` with the admin API and without Telegram answers /healthz with fastify loaded and
 *   without grammY, the PDF reader, the MCP SDK and the Anthropic SDK.
 *
 * Each case also asserts a module that must be there (the core, the command, fastify), so a
 * preload that saw nothing could not pass.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { tempDir } from '../support/databases';
import { freePort } from '../support/free-port';
import { cleanEnv, ROOT, runCli, startTs } from '../support/run-process';

const PRELOAD = path.join(ROOT, 'test/support/loaded-modules-preload.js');
const ANTHROPIC_KEY = 'sk-ant-test-startup-0123456789';

/** Packages and modules no short command (and no start without Telegram) may load. */
const HEAVY = [
  'node_modules/@anthropic-ai/sdk/',
  'node_modules/@qdrant/js-client-rest/',
  'node_modules/pg/',
  'node_modules/@prisma/adapter-pg/',
  'generated/postgres/',
  'node_modules/grammy/',
  'node_modules/unpdf/',
  'node_modules/@modelcontextprotocol/sdk/',
];

/** `src/cli/index.ts` and `dist/cli/index.js` are `cli/index`; a package's file keeps its path. */
function moduleName(file: string): string {
  const relative = path.relative(ROOT, file).split(path.sep).join('/');
  const own = /^(?:src|dist)\/(.+)\.(?:ts|js)$/.exec(relative);
  return own ? own[1]! : relative;
}

/** An environment whose process writes the files it loaded to a file of its own. */
function observed(extra: Record<string, string>): { env: NodeJS.ProcessEnv; loaded: () => string[] } {
  const list = path.join(tempDir('nocturne-modules-'), 'loaded.txt');
  const env = cleanEnv({ ...extra, NODE_OPTIONS: `--require ${PRELOAD}`, NOCTURNE_TEST_LOADED_MODULES: list });
  return {
    env,
    loaded: () => fs.readFileSync(list, 'utf8').split('\n').map(moduleName),
  };
}

/** The loaded names a part names: a package by its path (`node_modules/grammy/`), a module by its name, a folder by `name/`. */
const matching = (loaded: readonly string[], parts: readonly string[]) =>
  loaded.filter((name) =>
    parts.some((part) => (part.includes('node_modules/') ? name.includes(part) : part.endsWith('/') ? name.startsWith(part) : name === part)),
  );

describe('what an entry point loads', () => {
  it("--help and a command's --help load the command table only", async () => {
    for (const args of [['--help'], ['forget', '--help'], ['export', '--help']]) {
      const run = observed({ DATA_DIR: path.join(tempDir(), 'data') });
      const result = await runCli(args, run.env);
      expect(result.code).toBe(0);
      const loaded = run.loaded();
      expect(matching(loaded, ['core', 'cli/commands/', 'storage/database', 'node_modules/@prisma/client/', ...HEAVY])).toEqual([]);
      expect(loaded).toEqual(expect.arrayContaining(['cli/index', 'cli/command-table']));
    }
  });

  it('scopes loads the core and its own command, none of the parts it does not use', async () => {
    const run = observed({ DATA_DIR: path.join(tempDir(), 'data'), ANTHROPIC_API_KEY: ANTHROPIC_KEY });
    const result = await runCli(['scopes', '--json'], run.env);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ scopes: [] });
    const loaded = run.loaded();
    expect(loaded).toEqual(expect.arrayContaining(['core', 'cli/commands/scopes', 'llm/anthropic-model']));
    expect(matching(loaded, ['cli/commands/']).filter((name) => name !== 'cli/commands/scopes')).toEqual([]);
    expect(matching(loaded, [...HEAVY, 'node_modules/fastify/', 'export/json-import'])).toEqual([]);
  });

  it('npm start without Telegram answers /healthz without grammY, the PDF reader, the MCP SDK or the model SDK', async () => {
    const port = await freePort();
    const run = observed({
      DATA_DIR: path.join(tempDir(), 'data'),
      ADMIN_TOKEN: 'startup-modules-admin-token',
      API_PORT: String(port),
      TERMINAL: 'off',
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    });
    const service = await startTs('src/main.ts', run.env, /Nocturne is ready/);
    try {
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toBe(0);
    const loaded = run.loaded();
    expect(matching(loaded, ['node_modules/fastify/']).length).toBeGreaterThan(0);
    expect(matching(loaded, HEAVY)).toEqual([]);
  });
});
