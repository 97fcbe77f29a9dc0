/**
 * Edits, replies and forwards as people send them: the real bot (grammY, long polling) against the
 * loopback Bot API, the service composed as `npm start` composes it, the loopback Anthropic model,
 * and `npm run cli -- sleep / export / forget` as child processes on the same SQLite file.
 *
 * - An edit replaces the stored text everywhere: after the edit alone, the words only the old
 *   text had are in no table (every column, FTS5 shadow tables included), not in the raw bytes of
 *   the database, its write-ahead log or the vector store, and not in the export files written
 *   before the edit.
 * - An edit after consolidation: the next sleep sends the model the edited text with the memory
 *   learned from the old text, and the memory is updated (the old version superseded); a forget
 *   of the words only the old text had then leaves them nowhere.
 * - The signed webhook channel edits by `messageId` (unknown ids and bad requests refused).
 * - In Telegram's webhook mode an edit arrives by POST and is applied the same way.
 * - A reply stores what it answers and the reply prompt shows it; a forward is stored as
 *   forwarded from its origin, and the consolidation prompt marks its line as not the person's
 *   own statement.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { signRequest } from '../../src/channels/webhook/signature';
import { loadConfig } from '../../src/config/load-config';
import type { Core } from '../../src/core';
import { startService, type RunningService } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { migratedDataDir, tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { cleanEnv, runCli } from '../support/run-process';
import { chaosSeed, createMarkerFactory, markerTail, createRng, freePort, rawFileHits, scanSqliteTables } from './chaos-support';

const ANA: FakeUser = { id: 7101, first_name: 'Ana' };
const BEN: FakeUser = { id: 7102, first_name: 'Ben' };
const CLEO: FakeUser = { id: 7103, first_name: 'Cleo' };
const BEA: FakeUser = { id: 7199, first_name: 'Bea' };
const WEBHOOK_SECRET = 'whk-edits-0123456789abcdef';
const TELEGRAM_SECRET = 'tg-edits-secret-0123456789';
const API_KEY = 'sk-ant-chaos-edits-00000000';

const scopeKey = (user: FakeUser) => `telegram:private:${user.id}`;
const isConsolidation = (seen: Pick<SeenLlmRequest, 'system'>) => (seen.system ?? '').includes('memory consolidation system');
const promptOf = (seen: Pick<SeenLlmRequest, 'messages'>) => seen.messages.at(-1)?.text ?? '';

describe('edits, replies and forwards through the real bot (chaos)', () => {
  const seed = chaosSeed('telegram-edits');
  const marker = createMarkerFactory(createRng(seed), 4);
  /** Ana's cat: called `catOld`, then (edited) `catNew`; `keep` is in both texts. */
  const words = { catOld: marker(), catNew: marker(), keep: marker(), benOld: marker(), benNew: marker(), hookOld: marker(), hookNew: marker() };
  const logs = memoryLogger();
  const figures: string[] = [];
  let double: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;
  let core: Core;
  let dataDir: string;
  let dbFile: string;
  let webhookBase: string;
  let cliEnv: NodeJS.ProcessEnv;

  /** The needles of a word: itself and its tail (FTS5 stores terms prefix-compressed). */
  const needlesOf = (word: string) => [word, markerTail(word)];

  async function cli(args: readonly string[]): Promise<string> {
    const run = await runCli(args, cliEnv);
    expect({ args, code: run.code, stderr: run.code === 0 ? '' : run.stderr.slice(0, 2_000) }).toEqual({ args, code: 0, stderr: '' });
    return run.stdout;
  }

  /** Sends a message as `from` and waits for the bot's answer; returns the Telegram message id. */
  async function say(from: FakeUser, text: string, options: { replyTo?: number } = {}): Promise<number> {
    const before = fake.sent(from.id).length;
    const update = fake.message(from, text, options);
    await fake.waitFor(() => fake.sent(from.id).length > before, 30_000, `the answer to ${text}`);
    return update.message.message_id;
  }

  /** The stored text of message `messageId` of `from`'s private chat. */
  async function storedText(from: FakeUser, messageId: number): Promise<string | undefined> {
    const row = await core.db.prisma.episode.findFirst({ where: { externalId: `${from.id}:${messageId}` }, select: { content: true } });
    return row?.content;
  }

  /** Edits are finished (their after-commit work too) when the service logs them. */
  const editsLogged = () => logs.lines().filter((l) => l.includes('a message was edited by its author')).length;

  /** Edits message `messageId` of `from` and waits until the edit is applied and its work finished. */
  async function editAndWait(from: FakeUser, messageId: number, text: string): Promise<void> {
    const logged = editsLogged();
    fake.edit(from, messageId, text);
    await fake.waitFor(() => editsLogged() > logged, 30_000, `the edit of ${messageId}`);
    expect(await storedText(from, messageId)).toBe(text);
  }

  /** Every place the word still is: tables, raw files (database, its log, vector store), export files. */
  function findEverywhere(word: string, exportFiles: readonly string[]): Record<string, string[]> {
    const needles = needlesOf(word);
    const found: Record<string, string[]> = {};
    const add = (place: string, what: string) => (found[place] ??= []).push(what);
    for (const h of scanSqliteTables(dbFile, needles).hits) add(`table ${h.table}.${h.column}`, h.excerpt.replace(/[^\x20-\x7e]/g, '.'));
    for (const h of [...rawFileHits(dbFile, needles), ...rawFileHits(path.join(dataDir, 'vectors.db'), needles)]) add(`raw ${path.basename(h.file)}`, h.needle);
    for (const file of exportFiles) {
      const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').toLowerCase() : '';
      for (const n of needles) if (text.includes(n)) add(`export ${path.basename(file)}`, n);
    }
    return found;
  }

  /** Writes a JSON export (at an --out path under DATA_DIR/exports) and a Markdown export of the scope; returns the files. */
  async function writeExports(key: string, name: string): Promise<string[]> {
    const out = path.join(dataDir, 'exports', `${name}.json`);
    await cli(['export', '--scope', key, '--out', out]);
    const markdown = JSON.parse(await cli(['export', '--scope', key, '--format', 'markdown', '--json'])) as { dir: string; files: string[] };
    const files = [out, ...markdown.files.map((f) => path.resolve(dataDir, markdown.dir, f))];
    for (const f of files) expect(fs.existsSync(f)).toBe(true);
    return files;
  }

  beforeAll(async () => {
    double = await startAnthropicDouble({
      responder: (seen) => {
        if (!isConsolidation(seen)) return { kind: 'text', text: 'Noted.' };
        const prompt = promptOf(seen);
        const cat = (word: string) => new RegExp(`^(E\\d+) .*user \\(Ana\\): My cat is called ${word}`, 'm').exec(prompt)?.[1];
        const learned = new RegExp(`^(M\\d+) .*cat is called ${words.catOld}`, 'm').exec(prompt)?.[1];
        const edited = cat(words.catNew);
        if (edited && learned) {
          const update = [{ memory: learned, content: `Ana's cat is called ${words.catNew}`, episodes: [edited], reason: 'the name was corrected' }];
          return { kind: 'text', text: JSON.stringify({ update }) };
        }
        const first = cat(words.catOld);
        if (first) {
          const created = [{ category: 'relationship', content: `Ana's cat is called ${words.catOld}`, confidence: 0.9, source: 'stated', episodes: [first] }];
          return { kind: 'text', text: JSON.stringify({ new: created }) };
        }
        return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
      },
    });
    fake = await startFakeTelegram();
    dataDir = migratedDataDir(tempDir('nocturne-chaos-edits-'));
    dbFile = path.join(dataDir, 'nocturne.db');
    const webhookPort = await freePort();
    const config = loadConfig({
      env: {
        DATA_DIR: dataDir,
        TZ: 'UTC',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: API_KEY,
        ANTHROPIC_BASE_URL: double.url,
        SLEEP_ENABLED: 'false',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: [ANA.id, BEN.id, CLEO.id].join(','),
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(webhookPort),
        TERMINAL: 'off',
      },
      envFile: false,
    });
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
    core = service.core;
    webhookBase = `http://127.0.0.1:${webhookPort}`;
    cliEnv = cleanEnv({ DATA_DIR: dataDir, LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: double.url, SLEEP_ENABLED: 'false' });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await double?.stop();
    process.stderr.write(`telegram-edits (seed ${seed}):\n  ${figures.join('\n  ')}\n`);
  });

  it('an edit replaces the text everywhere: the old-only word is in no table, raw file, vector store or export file', async () => {
    const old = `The spare key is under the ${words.benOld} pot by the door`;
    const id = await say(BEN, old);
    await core.embeddingWorker.drain();
    const files = await writeExports(scopeKey(BEN), 'ben');
    const before = findEverywhere(words.benOld, files);
    expect(Object.keys(before).length).toBeGreaterThan(0);

    const edited = `The spare key is under the ${words.benNew} pot by the door`;
    await editAndWait(BEN, id, edited);
    await core.embeddingWorker.drain();
    const after = findEverywhere(words.benOld, files);
    figures.push(`edit alone: places holding the old word before ${Object.keys(before).length}, after ${Object.keys(after).length}`);
    expect(after).toEqual({});
    // The new text is what search finds, by its words and by its vector.
    const scope = (await core.directory.findByKey(scopeKey(BEN)))!;
    const found = await core.search.search({ scopeId: scope.id, semanticQuery: `spare key ${words.benNew}`, kinds: ['episode'], limit: 5 });
    const episode = await core.db.prisma.episode.findFirstOrThrow({ where: { externalId: `${BEN.id}:${id}` } });
    expect(found.results.map((r) => r.id)).toContain(episode.id);
    expect(episode.embeddedWith).not.toBeNull();
    expect(episode.consolidated).toBe(false);
    expect(episode.metadata).toMatchObject({ edited: { times: 1 } });
    // Audited, without the old words.
    const audit = await core.db.prisma.auditEvent.findFirstOrThrow({ where: { scopeId: scope.id, action: 'edit', subjectId: episode.id } });
    expect(JSON.stringify(audit)).not.toContain(words.benOld);
  }, 240_000);

  it('an edit after consolidation: the next sleep reads the edited text beside what was learned, and updates the memory; forgetting the old word then leaves it nowhere', async () => {
    const id = await say(ANA, `My cat is called ${words.catOld} and she sleeps on the ${words.keep} sofa`);
    await cli(['sleep', '--scope', scopeKey(ANA)]);
    const scope = (await core.directory.findByKey(scopeKey(ANA)))!;
    const learned = await core.db.prisma.memory.findFirstOrThrow({ where: { scopeId: scope.id, content: { contains: words.catOld } } });
    const files = await writeExports(scopeKey(ANA), 'ana');

    const edited = `My cat is called ${words.catNew} and she sleeps on the ${words.keep} sofa`;
    await editAndWait(ANA, id, edited);
    const asked = double.requests.length;
    await cli(['sleep', '--scope', scopeKey(ANA)]);
    const prompts = double.requests.slice(asked).filter(isConsolidation).map(promptOf);
    const sent = prompts.find((p) => p.includes(`My cat is called ${words.catNew}`));
    figures.push(`edit after consolidation: consolidation prompts after the edit ${prompts.length}, with the edited text ${sent ? 1 : 0}`);
    expect(sent).toBeDefined();
    // The memory learned from the old text is shown beside it, and the old text is not.
    expect(sent).toMatch(new RegExp(`^M\\d+ .*cat is called ${words.catOld}`, 'm'));
    expect(sent).not.toContain(`My cat is called ${words.catOld}`);
    const current = await core.db.prisma.memory.findMany({ where: { scopeId: scope.id, validTo: null, content: { contains: 'cat is called' } } });
    expect(current.map((m) => m.content)).toEqual([`Ana's cat is called ${words.catNew}`]);
    const old = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: learned.id } });
    expect(old.validTo).not.toBeNull();

    // The old word now lives only in the superseded version: a forget of it leaves it nowhere
    // (the whole chain goes, as any forget of a memory takes its versions and their messages).
    await cli(['forget', '--scope', scopeKey(ANA), '--words', words.catOld, '--yes']);
    await core.embeddingWorker.drain();
    const left = findEverywhere(words.catOld, files);
    figures.push(`forget after the edit: places holding the old word ${Object.keys(left).length}`);
    expect(left).toEqual({});
    expect(await core.db.prisma.memory.count({ where: { id: { in: [learned.id, ...current.map((m) => m.id)] } } })).toBe(0);
  }, 360_000);

  it('the signed webhook channel edits by messageId; an unknown id or an edit without one is refused and changes nothing', async () => {
    const post = async (body: Record<string, unknown>) => {
      const raw = JSON.stringify(body);
      const response = await fetch(`${webhookBase}/webhook/crm`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body: raw }) },
        body: raw,
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const first = await post({ user: 'u1', text: `Deliveries go to the ${words.hookOld} gate`, messageId: 'm1' });
    expect(first.status).toBe(200);
    const edited = await post({ user: 'u1', text: `Deliveries go to the ${words.hookNew} gate`, messageId: 'm1', edit: true });
    const unknown = await post({ user: 'u1', text: 'Something else', messageId: 'm404', edit: true });
    const noId = await post({ user: 'u1', text: 'Something else', edit: true });
    const otherUser = await post({ user: 'u2', text: 'Not yours', messageId: 'm1', edit: true });
    figures.push(`webhook edit: ${edited.status}, unknown id ${unknown.status}, no id ${noId.status}, another user's id ${otherUser.status}`);
    expect(edited).toEqual({ status: 200, body: { edited: true, memoriesToRecheck: 0 } });
    expect(unknown.status).toBe(404);
    expect(noId.status).toBe(400);
    expect(JSON.stringify(noId.body)).toContain('messageId');
    expect(otherUser.status).toBe(404);
    const row = await core.db.prisma.episode.findFirstOrThrow({ where: { externalId: 'm1' } });
    expect(row.content).toBe(`Deliveries go to the ${words.hookNew} gate`);
    await core.embeddingWorker.drain();
    expect(findEverywhere(words.hookOld, [])).toEqual({});
  }, 120_000);

  it('a reply stores what it answers and the reply prompt shows it; a forward is stored as forwarded, and consolidation is told it is not the person\u2019s own statement', async () => {
    const first = await say(CLEO, 'Shall we meet at the harbour on Saturday?');
    let asked = double.requests.length;
    await say(CLEO, 'Actually make it Sunday', { replyTo: first });
    const replyPrompt = double.requests.slice(asked).find((r) => !isConsolidation(r))!;
    const shown = replyPrompt.messages.map((m) => m.text).join('\n');
    expect(shown).toContain('(in reply to: "Shall we meet at the harbour on Saturday?") Actually make it Sunday');

    asked = double.requests.length;
    const before = fake.sent(CLEO.id).length;
    fake.forward(CLEO, 'I am allergic to peanuts and I live in Lisbon', { user: BEA });
    await fake.waitFor(() => fake.sent(CLEO.id).length > before, 30_000, 'the answer to the forward');
    const forwardPrompt = double.requests.slice(asked).find((r) => !isConsolidation(r))!;
    expect(forwardPrompt.messages.map((m) => m.text).join('\n')).toContain('(forwarded from Bea) I am allergic to peanuts and I live in Lisbon');
    const stored = await core.db.prisma.episode.findFirstOrThrow({ where: { content: 'I am allergic to peanuts and I live in Lisbon' } });
    expect(stored.metadata).toMatchObject({ forwardedFrom: 'Bea' });
    const reply = await core.db.prisma.episode.findFirstOrThrow({ where: { content: 'Actually make it Sunday' } });
    expect(reply.metadata).toMatchObject({ replyTo: `${CLEO.id}:${first}`, replyToText: 'Shall we meet at the harbour on Saturday?' });

    asked = double.requests.length;
    await cli(['sleep', '--scope', scopeKey(CLEO)]);
    const consolidation = double.requests.slice(asked).filter(isConsolidation);
    const line = consolidation
      .map(promptOf)
      .join('\n')
      .split('\n')
      .find((l) => l.includes('allergic to peanuts'));
    figures.push(`forward line in the consolidation prompt: ${line}`);
    expect(line).toMatch(/^E\d+ .*user \(Cleo\), forwarded from Bea \(not the user's own statement\): I am allergic to peanuts/);
    expect(consolidation[0]!.system).toContain('forwarded from X');
    const replyLine = consolidation
      .map(promptOf)
      .join('\n')
      .split('\n')
      .find((l) => l.includes('Actually make it Sunday'));
    expect(replyLine).toContain('(in reply to: "Shall we meet at the harbour on Saturday?")');
  }, 240_000);
});

describe('edits in Telegram webhook mode (chaos)', () => {
  const logs = memoryLogger();
  let double: AnthropicDouble;
  let fake: FakeTelegramServer;
  let service: RunningService;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    fake = await startFakeTelegram();
    const port = await freePort();
    const config = loadConfig({
      env: {
        DATA_DIR: migratedDataDir(tempDir('nocturne-chaos-edits-webhook-')),
        TZ: 'UTC',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: API_KEY,
        ANTHROPIC_BASE_URL: double.url,
        SLEEP_ENABLED: 'false',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_ROOT: fake.apiRoot,
        TELEGRAM_ALLOWED_USERS: String(ANA.id),
        TELEGRAM_MODE: 'webhook',
        TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram',
        TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
        WEBHOOK_PORT: String(port),
        TERMINAL: 'off',
      },
      envFile: false,
    });
    fake.routeWebhook([`http://127.0.0.1:${port}/telegram`]);
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await fake?.close();
    await double?.stop();
  });

  it('an edited_message posted by Telegram replaces the stored text', async () => {
    expect(fake.webhook()?.allowedUpdates).toContain('edited_message');
    const update = fake.message(ANA, 'My locker code is on the blue card');
    await fake.waitFor(() => fake.sent(ANA.id).length > 0, 30_000, 'the answer');
    fake.edit(ANA, update.message.message_id, 'My locker code is on the green card');
    const prisma = service.core.db.prisma;
    const deadline = Date.now() + 30_000;
    let content: string | undefined;
    while (Date.now() < deadline) {
      content = (await prisma.episode.findFirst({ where: { externalId: `${ANA.id}:${update.message.message_id}` } }))?.content;
      if (content === 'My locker code is on the green card') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(content).toBe('My locker code is on the green card');
    expect(await prisma.episode.count({ where: { content: { contains: 'blue card' } } })).toBe(0);
  }, 120_000);
});
