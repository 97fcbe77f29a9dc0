/**
 * Hostile input, round three: scope keys and the paths of export files. An earlier version named
 * a scope's export folder from its key, so a scope keyed `..` made a forget's export scrub walk
 * `DATA_DIR` and delete the database; `.` walked every other person's exports, and `kim:lee` and
 * `kim-lee` shared one folder. Every door that can create a scope is tried with such keys, on the
 * composed service (admin API and webhook over HTTP) and the CLI as child processes, and a store
 * that already holds such scopes (as an earlier version let in) is forgotten in through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { signRequest } from '../../src/channels/webhook/signature';
import { exportFolderName } from '../../src/memory/archive/export-paths';
import { createMemory } from '../../src/memory/memories/memory-writer';
import type { RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { migratedDataDir, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv } from '../support/run-process';
import { elapsed } from './chaos-support';
import { startComposedService } from './composed-service';
import { runCliToEnd } from './crash-support';

const WEBHOOK_SECRET = 'whk-scope-keys-0123456789abcdef';
const ADMIN_TOKEN = 'adm-scope-keys-0123456789abcdef';

/** Every file under `dir` (relative paths) whose text holds `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && fs.readFileSync(path.join(e.parentPath, e.name), 'utf8').includes(needle))
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

describe('hostile input, round three: scope keys and export paths (chaos)', () => {
  const logs = memoryLogger();
  const started = performance.now();
  const root = tempDir('nocturne-chaos-scope-keys-');
  const dataDir = migratedDataDir(path.join(root, 'data'));
  const exportsDir = path.join(dataDir, 'exports');
  const dbFile = path.join(dataDir, 'nocturne.db');
  const env = cleanEnv({ DATA_DIR: dataDir, LOG_LEVEL: 'warn', TERMINAL: 'off', SLEEP_ENABLED: 'false' });
  let double: AnthropicDouble;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;
  const figures: Record<string, string | number> = {};

  const api = async (method: string, route: string, body?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${apiBase}${route}`, { method, headers, body });
    return { status: response.status, text: await response.text() };
  };
  const scopeKeys = async () => (await service.core.db.prisma.scope.findMany({ select: { key: true } })).map((s) => s.key).sort();
  const writeFile = (name: string, text: string) => {
    const file = path.join(root, name);
    fs.writeFileSync(file, text);
    return file;
  };
  const exportDoc = (key: string, id: string) => {
    const at = '2026-01-05T10:00:00.000Z';
    return JSON.stringify({
      format: 'nocturne.scope-export',
      version: 1,
      scope: {
        id,
        key,
        channel: 'import',
        kind: 'user',
        title: null,
        ownerId: null,
        timezone: null,
        paused: false,
        settings: null,
        lastMessageAt: null,
        createdAt: at,
        updatedAt: at,
      },
      profile: null,
      conversations: [],
      episodes: [],
      memories: [],
      memoryLinks: [],
      entities: [],
      digests: [],
      sleepRuns: [],
      auditEvents: [],
    });
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    ({ service, apiBase, webhookBase } = await startComposedService({
      dataDir,
      logger: logs.logger,
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-scope-keys', ANTHROPIC_BASE_URL: double.url, ADMIN_TOKEN, WEBHOOK_SECRET },
    }));
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(root, { recursive: true, force: true });
    // eslint-disable-next-line no-console
    console.log(`scope-key-doors: ${JSON.stringify(figures)}; ${elapsed(started)}`);
  });

  it('every door refuses a key made of dots, broken Unicode or surrounding spaces, and creates nothing', async () => {
    const before = await scopeKeys();
    const lines = writeFile(
      'lines.jsonl',
      [
        JSON.stringify({ content: 'a line for ana' }),
        JSON.stringify({ scope: '..', content: 'a line for the parent folder' }),
        JSON.stringify({ scope: '.', content: 'a line for the exports folder' }),
        JSON.stringify({ scope: ' ana', content: 'a line with a leading space' }),
        '{"scope":"\\ud800","content":"half a surrogate pair"}',
      ].join('\n'),
    );

    const wholeFile = await runCliToEnd(['import', '--scope', '..', lines], env, 2);
    expect(wholeFile.stderr()).toMatch(/not a valid scope key: a scope key cannot be made only of dots/);
    const perLine = await runCliToEnd(['import', '--scope', 'door:ana', lines, '--json'], env, 1);
    const report = JSON.parse(perLine.stdout()) as { imported: number; invalidLines: Array<{ line: number; error: string }> };
    expect(report.imported).toBe(1);
    expect(report.invalidLines.map((i) => i.line)).toEqual([2, 3, 4, 5]);
    expect(report.invalidLines.every((i) => /not a valid scope key/.test(i.error))).toBe(true);

    const dots = writeFile('dots.json', exportDoc('..', 'scope-from-dots'));
    expect((await runCliToEnd(['import-scope', dots], env, 2)).stderr()).toMatch(/not a valid scope key/);
    expect((await runCliToEnd(['import-scope', writeFile('ok.json', exportDoc('door:copy', 'scope-from-ok')), '--as', '.'], env, 2)).stderr()).toMatch(
      /not a valid scope key/,
    );
    expect((await runCliToEnd(['chat', '--scope', '..'], env, 2)).stderr()).toMatch(/not a valid scope key/);

    const viaApi = await api('POST', '/scopes/scope-from-dots/import', exportDoc('..', 'scope-from-dots'));
    const viaApiDot = await api('POST', '/scopes/scope-from-dot/import', exportDoc('.', 'scope-from-dot'));
    figures.adminImport = `${viaApi.status}, ${viaApiDot.status}`;
    expect([viaApi.status, viaApiDot.status]).toEqual([400, 400]);
    expect(viaApi.text).toMatch(/not a valid scope key/);

    // PostgreSQL stores both halves of a surrogate pair as U+FFFD: two such users would be one person.
    const statuses: number[] = [];
    for (const user of ['\\ud800', '\\udc00', ' \\u200b ', '\\u200bana']) {
      const body = `{"user":"${user}","text":"hello from a broken name"}`;
      const headers = signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body });
      const response = await fetch(`${webhookBase}/webhook/crm`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      statuses.push(response.status);
    }
    figures.webhookBrokenUsers = statuses.join(',');
    expect(statuses).toEqual([400, 400, 400, 400]);

    const created = (await scopeKeys()).filter((k) => !before.includes(k));
    expect(created).toEqual(['door:ana']);
  }, 180_000);

  it('a forget in a scope keyed `..` or `.` (stored by an earlier version) touches nothing outside its own export folder', async () => {
    const prisma = service.core.db.prisma;
    // A person with an export: the files a forget elsewhere must leave alone.
    await runCliToEnd(['import', '--scope', 'kept:ana', writeFile('ana.jsonl', JSON.stringify({ content: 'Ana grows quinces on the balcony' }))], env);
    await runCliToEnd(['export', '--scope', 'kept:ana', '--format', 'markdown'], env);
    const anaFiles = filesHolding(exportsDir, 'quinces');
    expect(anaFiles.length).toBeGreaterThan(0);
    const planted: Array<{ id: string; memoryId: string }> = [];
    for (const key of ['..', '.']) {
      const scope = await prisma.scope.create({ data: { key, channel: 'import', kind: 'user' } });
      const memory = await prisma.$transaction((tx) =>
        createMemory(tx, { scopeId: scope.id, category: 'fact', content: 'The owner grows quinces too', confidence: 0.9 }, { now: new Date(), by: 'owner' }),
      );
      planted.push({ id: scope.id, memoryId: memory.id });
    }
    const inode = fs.statSync(dbFile).ino;
    const scopesBefore = await prisma.scope.count();

    for (const p of planted) {
      const answer = await api('DELETE', `/scopes/${encodeURIComponent(p.id)}/memories/${p.memoryId}`);
      expect(answer.status).toBe(200);
    }
    figures.databaseAfterForget = fs.existsSync(dbFile) && fs.statSync(dbFile).ino === inode ? 'kept' : 'DELETED';
    expect(fs.existsSync(dbFile)).toBe(true);
    expect(fs.statSync(dbFile).ino).toBe(inode);
    expect(fs.existsSync(`${dbFile}-wal`)).toBe(true);
    expect(filesHolding(exportsDir, 'quinces')).toEqual(anaFiles);
    // The store still answers and still holds everyone, in this process and in a new one.
    expect(await prisma.scope.count()).toBe(scopesBefore);
    const listed = JSON.parse((await runCliToEnd(['scopes', '--json'], env)).stdout()) as { scopes: Array<{ key: string }> };
    const keys = listed.scopes.map((s) => s.key);
    expect(keys).toEqual(expect.arrayContaining(['kept:ana', '..', '.']));
  }, 180_000);

  it('keys with one slug (`kim:lee`, `kim-lee`) get folders of their own; one person\u2019s forget never edits the other\u2019s files', async () => {
    const lines = writeFile(
      'kims.jsonl',
      [
        JSON.stringify({ scope: 'kim:lee', content: 'I keep a tangerine tree by the window' }),
        JSON.stringify({ scope: 'kim-lee', content: 'My tangerine jam won a prize' }),
      ].join('\n'),
    );
    await runCliToEnd(['import', lines], env);
    for (const key of ['kim:lee', 'kim-lee']) await runCliToEnd(['export', '--scope', key, '--format', 'markdown'], env);
    const folders = await Promise.all(['kim:lee', 'kim-lee'].map(async (key) => exportFolderName((await service.core.scopes.findByKey(key))!)));
    expect(new Set(folders).size).toBe(2);
    for (const folder of folders) expect(filesHolding(path.join(exportsDir, folder), 'tangerine').length).toBeGreaterThan(0);

    await runCliToEnd(['forget', '--scope', 'kim:lee', '--words', 'tangerine', '--yes'], env);
    const [mine, theirs] = folders.map((folder) => filesHolding(path.join(exportsDir, folder!), 'tangerine'));
    figures.sharedSlug = `kim:lee files holding the word ${mine!.length}, kim-lee ${theirs!.length}`;
    expect(mine).toEqual([]);
    expect(theirs!.length).toBeGreaterThan(0);
  }, 180_000);

  it('export files of an earlier version are moved into their scope\u2019s folder and scrubbed; a folder two scopes shared is left alone', async () => {
    const lines = writeFile('olive.jsonl', JSON.stringify({ content: 'The olive press opens on Monday' }));
    await runCliToEnd(['import', '--scope', 'legacy:olive', lines], env);
    const scope = (await service.core.scopes.findByKey('legacy:olive'))!;
    // Where earlier versions wrote them: a folder named from the key, the chat pair at the top.
    fs.mkdirSync(path.join(exportsDir, 'legacy-olive', 'memory'), { recursive: true });
    fs.writeFileSync(path.join(exportsDir, 'legacy-olive', 'MEMORY.md'), '# MEMORY.md\n- The olive press opens on Monday\n- Something else\n');
    fs.writeFileSync(path.join(exportsDir, 'legacy-olive', 'memory', '2026-01-05.md'), '- 10:00 The olive press opens on Monday\n');
    fs.writeFileSync(path.join(exportsDir, 'nocturne-legacy-olive.json'), '{\n  "content": "The olive press opens on Monday"\n}\n');
    fs.mkdirSync(path.join(exportsDir, 'kim-lee'), { recursive: true });
    fs.writeFileSync(path.join(exportsDir, 'kim-lee', 'MEMORY.md'), '- an olive press for kim\n');

    await runCliToEnd(['forget', '--scope', 'legacy:olive', '--words', 'olive press', '--yes'], env);
    const folder = path.join(exportsDir, exportFolderName(scope));
    expect(fs.existsSync(path.join(exportsDir, 'legacy-olive'))).toBe(false);
    expect(fs.existsSync(path.join(exportsDir, 'nocturne-legacy-olive.json'))).toBe(false);
    expect(fs.readFileSync(path.join(folder, 'MEMORY.md'), 'utf8')).toBe('# MEMORY.md\n- Something else\n');
    expect(filesHolding(exportsDir, 'olive press')).toEqual(['kim-lee/MEMORY.md']);
  }, 180_000);
});
