/**
 * What the memory page's browser tests and the screenshot script share: Debian's Chromium (found,
 * or the reason it is absent), Telegram Mini App init data signed the way Telegram signs it, and
 * `npm start` (main.ts as a child process) over a temp SQLite store into which the two people's
 * exports (web-page-fixture.ts) were imported with the CLI (`import-scope`), with the loopback
 * Bot API, the model doubles and the admin API on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../chaos/chaos-support';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from '../doubles/telegram-server';
import { ANA, BRUNO, buildExport, type FixtureFacts, scopeKeyOf } from './web-page-fixture';
import { tempDir } from '../support/databases';
import { cleanEnv, nodeArgs, ROOT, runCli } from '../support/run-process';

/** Where Debian's package puts the browser; `chromium` on PATH is tried after it. */
const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The browser's path, or why there is none (the browser tests skip with that reason). */
export function findChromium(): { path: string } | { missing: string } {
  for (const candidate of CHROMIUM_PATHS) if (fs.existsSync(candidate)) return { path: candidate };
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'chromium');
    if (dir && fs.existsSync(candidate)) return { path: candidate };
  }
  return { missing: `no Chromium at ${CHROMIUM_PATHS.join(' or ')} or on PATH (apt-get install -y chromium; .ci/run installs it)` };
}

/** A phone's screen, CSS pixels (an iPhone 12-15). */
export const PHONE = { width: 390, height: 844, deviceScaleFactor: 1, isMobile: true, hasTouch: true } as const;

/**
 * Telegram Mini App init data for `user`, signed with `botToken` as Telegram does
 * (core.telegram.org/bots/webapps#validating-data-received-via-the-mini-app): the secret is
 * HMAC-SHA256 of the bot token with the key "WebAppData"; `hash` is HMAC-SHA256 with that secret
 * over the fields other than `hash`, sorted by name, as `name=value` lines.
 */
export function signInitData(botToken: string, user: FakeUser, options: { authDate?: Date; startParam?: string } = {}): string {
  const fields: Record<string, string> = {
    auth_date: String(Math.floor((options.authDate ?? new Date()).getTime() / 1000)),
    query_id: `AAH${user.id}test`,
    user: JSON.stringify({ id: user.id, first_name: user.first_name, language_code: 'en', allows_write_to_pm: true }),
    ...(options.startParam && { start_param: options.startParam }),
  };
  const checkString = Object.keys(fields)
    .sort()
    .map((name) => `${name}=${fields[name]}`)
    .join('\n');
  const secret = createHmac('sha256', 'WebAppData').update(botToken).digest();
  const hash = createHmac('sha256', secret).update(checkString).digest('hex');
  return new URLSearchParams({ ...fields, hash }).toString();
}

/** The address Telegram opens a Mini App at: the page with the init data (and theme) in the hash. */
export function miniAppUrl(base: string, initData: string): string {
  const hash = new URLSearchParams({ tgWebAppData: initData, tgWebAppVersion: '8.0', tgWebAppPlatform: 'android' });
  return `${base}/app#${hash.toString()}`;
}

/** The admin token of the page tests' service (the audit is read through the admin API). */
export const PAGE_ADMIN_TOKEN = 'adm-web-page-0123456789abcdef';

/** A running service with the two people's scopes imported. */
export interface PageService {
  readonly base: string;
  readonly env: NodeJS.ProcessEnv;
  readonly telegram: FakeTelegramServer;
  readonly facts: { readonly ana: FixtureFacts; readonly bruno: FixtureFacts };
  /** What the service printed so far (its JSON log lines). */
  output(): string;
  /** GET an admin route (with the bearer token); its JSON. */
  admin(pathname: string): Promise<unknown>;
  /** `npm run cli -- web-link --scope KEY`: the single-use login URL it printed. */
  webLink(person: FakeUser): Promise<string>;
  stop(): Promise<void>;
}

/** Runs the CLI; throws with its output unless it exits 0. */
async function cliOk(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  const run = await runCli(args, env);
  if (run.code !== 0) throw new Error(`npm run cli -- ${args.join(' ')} exited with ${run.code}:\n${run.stdout}\n${run.stderr}`);
  return run;
}

/** How long `npm start` may take to be ready on a loaded 2-core machine. */
const READY_TIMEOUT_MS = 120_000;
/** How long it may take to stop after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 15_000;

/** `npm start` (node on the built main.js, one process); resolves once it logs that it is ready. */
async function startService(env: NodeJS.ProcessEnv): Promise<{ output(): string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, nodeArgs('src/main.ts'), {
    env,
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ended = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await ended;
    clearTimeout(timer);
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!/Nocturne is ready/.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`npm start did not become ready:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { output: () => output, stop };
}

/** Imports both people's exports with the CLI, then starts `npm start` with the admin API (and so the page) on. */
export async function startPageService(options: { now?: Date; extraEnv?: Record<string, string>; demo?: boolean } = {}): Promise<PageService> {
  const now = options.now ?? new Date();
  const dataDir = tempDir('nocturne-web-page-');
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const model: AnthropicDouble = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: '{}' }) });
    cleanups.push(() => model.stop());
    const ollama: OllamaDouble = await startOllamaDouble({ models: ['nomic-embed-text'] });
    cleanups.push(() => ollama.stop());
    const port = await freePort();
    const env = cleanEnv({
      DATA_DIR: dataDir,
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOWED_USERS: [ANA.id, BRUNO.id].join(','),
      ADMIN_TOKEN: PAGE_ADMIN_TOKEN,
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      ANTHROPIC_API_KEY: 'sk-ant-web-page-test-000000000000',
      ANTHROPIC_BASE_URL: model.url,
      EMBEDDER: 'ollama',
      EMBEDDING_MODEL: 'nomic-embed-text',
      OLLAMA_HOST: ollama.url,
      LOG_LEVEL: 'info',
      ...options.extraEnv,
    });
    const facts: Record<string, FixtureFacts> = {};
    for (const [label, person] of [
      ['ana', ANA],
      ['bruno', BRUNO],
    ] as const) {
      // The demo (screenshots) leaves out the memory written in markup, which is there for the tests.
      const { document, facts: personFacts } = buildExport(person, now, { markup: !options.demo });
      const file = path.join(dataDir, `${label}-export.json`);
      fs.writeFileSync(file, JSON.stringify(document));
      await cliOk(['import-scope', file], env);
      facts[label] = personFacts;
    }
    const service = await startService(env);
    cleanups.push(() => service.stop());
    const base = `http://127.0.0.1:${port}`;
    return {
      base,
      env,
      telegram,
      output: service.output,
      facts: { ana: facts.ana!, bruno: facts.bruno! },
      async admin(pathname) {
        const response = await fetch(`${base}${pathname}`, { headers: { authorization: `Bearer ${PAGE_ADMIN_TOKEN}` } });
        if (!response.ok) throw new Error(`GET ${pathname} answered ${response.status}: ${await response.text()}`);
        return response.json();
      },
      async webLink(person) {
        const run = await cliOk(['web-link', '--scope', scopeKeyOf(person)], env);
        const url = /https?:\/\/\S+\/app\/login\?t=\S+/.exec(run.stdout)?.[0];
        if (!url) throw new Error(`web-link printed no link:\n${run.stdout}\n${run.stderr}`);
        return url;
      },
      async stop() {
        for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}
