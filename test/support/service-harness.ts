/**
 * The service started the way production starts it, shared by the suites that talk to it from
 * outside: `npm start`'s command (node with tsx as a loader running src/main.ts, one process, so
 * a signal reaches the service itself) as a child process with a controlled environment, the admin
 * API on a free loopback port, ready once /readyz answers 200 and the start-up says so; stopped
 * with SIGTERM and judged by its exit code. The doubles it is asked for (the loopback Bot API, the
 * Anthropic and Ollama servers) are started before it, handed to it through its settings, and
 * stopped after it.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { startAnthropicDouble, type AnthropicDouble, type AnthropicDoubleOptions } from '../doubles/anthropic-server';
import { startOllamaDouble, type OllamaDouble, type OllamaDoubleOptions } from '../doubles/ollama-server';
import { startFakeTelegram, type FakeTelegramServer } from '../doubles/telegram-server';
import { migratedDataDir, tempDir } from './databases';
import { freePort } from './free-port';
import { cleanEnv, READY_TIMEOUT_MS, startEntry } from './run-process';

/** A loopback address nothing listens on: an embedder pointed here never downloads a model. */
const CLOSED_HOST = 'http://127.0.0.1:9';
/** How often readiness is asked for while the service starts. */
const READY_POLL_MS = 100;
/** How long a SIGTERM'd service may take to stop before it is killed (its own stop watchdog is 10 s). */
const STOP_GRACE_MS = 60_000;
const DEFAULT_ADMIN_TOKEN = 'adm-service-harness-0123456789abcdef';

/** A double the test made itself (kept running after the service stops), or the options of one to start. */
type Given<Double, Options> = { readonly use: Double } | { readonly start: Options };

export interface NocturneOptions {
  /**
   * The data folder (give the same one to start again on the same store). When not given, a new one
   * holding a copy of the run's migrated store, as a store is on every start but the first (saves
   * the start its first migration: up to ~1.3 s of CPU); `emptyStore` gives an empty one, whose start migrates.
   */
  readonly dataDir?: string;
  readonly emptyStore?: boolean;
  /** Settings on top of the harness's (DATA_DIR, API_PORT, ADMIN_TOKEN, no terminal, no sleep, no local embedder): they win. */
  readonly env?: Record<string, string>;
  /** The signed webhook channel on a free loopback port, with this secret. */
  readonly webhookSecret?: string;
  /** The loopback Bot API: Telegram in polling mode, these people allowed. */
  readonly telegram?: Given<FakeTelegramServer, Parameters<typeof startFakeTelegram>[0]> & { readonly allowedUsers: readonly number[] };
  /** The model: an Anthropic double. */
  readonly anthropic?: Given<AnthropicDouble, AnthropicDoubleOptions>;
  /** The embedder: an Ollama double (without one, EMBEDDER=ollama on a closed port, as nothing here embeds). */
  readonly ollama?: Given<OllamaDouble, OllamaDoubleOptions>;
}

/** `npm start` running. */
export interface RunningNocturne {
  readonly child: ChildProcess;
  readonly dataDir: string;
  /** The whole environment it was started with (to start a CLI or a second start on the same settings). */
  readonly env: NodeJS.ProcessEnv;
  /** `http://127.0.0.1:<API_PORT>` */
  readonly apiBase: string;
  readonly adminToken: string;
  /** `http://127.0.0.1:<WEBHOOK_PORT>`, when the webhook channel was asked for. */
  readonly webhookBase?: string;
  readonly telegram?: FakeTelegramServer;
  readonly anthropic?: AnthropicDouble;
  readonly ollama?: OllamaDouble;
  /** Everything it printed so far (stdout and stderr: the JSON logs). */
  output(): string;
  logged(pattern: RegExp): boolean;
  running(): boolean;
  /** A request to the admin API with the token (`route` starts with `/`). */
  api(route: string, init?: RequestInit): Promise<Response>;
  /** Resolves when the process has ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * SIGTERM and wait (SIGKILL past the grace), then stop the doubles it started unless `keepDoubles`
   * (a CLI run on the same settings afterwards); the exit code.
   */
  stop(options?: { readonly keepDoubles?: boolean }): Promise<number | null>;
  /** SIGKILL (a crash), then stop the doubles it started (a no-op once stopped). */
  kill(): Promise<void>;
}

async function provide<Double, Options>(
  given: Given<Double, Options> | undefined,
  start: (options: Options) => Promise<Double>,
  started: Array<() => Promise<void>>,
  stop: (double: Double) => Promise<void>,
): Promise<Double | undefined> {
  if (!given) return undefined;
  if ('use' in given) return given.use;
  const double = await start(given.start);
  started.push(() => stop(double));
  return double;
}

/** A new data folder: with a copy of the migrated store, unless asked for an empty one or the store is elsewhere or encrypted. */
function newDataDir(options: NocturneOptions): string {
  const dir = path.join(tempDir('nocturne-service-'), 'data');
  const ownStore = options.env?.DB_PROVIDER === 'postgres' || options.env?.DATABASE_URL || options.env?.DATABASE_ENCRYPTION_KEY;
  return options.emptyStore || ownStore ? dir : migratedDataDir(dir);
}

/** Whether the start-up's "Nocturne is ready" line reaches the output with these settings. */
function readyLineShown(env: NodeJS.ProcessEnv): boolean {
  return !env.LOG_FILE && ['debug', 'info', undefined].includes(env.LOG_LEVEL);
}

/** Starts `npm start` and resolves once it is ready; throws with its output when it ends or hangs first. */
export async function startNocturne(options: NocturneOptions = {}): Promise<RunningNocturne> {
  const doubles: Array<() => Promise<void>> = [];
  const stopDoubles = async () => {
    for (const stop of doubles.splice(0).reverse()) await stop();
  };
  try {
    const telegram = await provide(options.telegram, startFakeTelegram, doubles, (d) => d.close());
    const anthropic = await provide(options.anthropic, startAnthropicDouble, doubles, (d) => d.stop());
    const ollama = await provide(options.ollama, startOllamaDouble, doubles, (d) => d.stop());
    const dataDir = options.dataDir ?? newDataDir(options);
    const apiPort = await freePort();
    const webhookPort = options.webhookSecret ? await freePort() : undefined;
    const env = cleanEnv({
      DATA_DIR: dataDir,
      API_PORT: String(apiPort),
      ADMIN_TOKEN: DEFAULT_ADMIN_TOKEN,
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      EMBEDDER: 'ollama',
      OLLAMA_HOST: ollama?.url ?? CLOSED_HOST,
      ...(options.webhookSecret && { WEBHOOK_SECRET: options.webhookSecret, WEBHOOK_PORT: String(webhookPort) }),
      ...(telegram && {
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_API_ROOT: telegram.apiRoot,
        TELEGRAM_ALLOWED_USERS: options.telegram!.allowedUsers.join(','),
      }),
      ...(anthropic && { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-service-harness-000000000000', ANTHROPIC_BASE_URL: anthropic.url }),
      ...options.env,
    });
    const webhookBase = webhookPort ? { webhookBase: `http://127.0.0.1:${webhookPort}` } : {};
    const running = spawnService(env, { dataDir, telegram, anthropic, ollama, ...webhookBase }, stopDoubles);
    await waitUntilReady(running, readyLineShown(env));
    return running;
  } catch (error) {
    await stopDoubles();
    throw error;
  }
}

function spawnService(
  env: NodeJS.ProcessEnv,
  parts: Pick<RunningNocturne, 'dataDir' | 'telegram' | 'anthropic' | 'ollama' | 'webhookBase'>,
  stopDoubles: () => Promise<void>,
): RunningNocturne {
  const entry = startEntry('src/main.ts', [], env);
  const { child, ended: exited } = entry;
  const apiBase = `http://127.0.0.1:${env.API_PORT}`;
  const adminToken = env.ADMIN_TOKEN!;
  return {
    ...parts,
    child,
    env,
    apiBase,
    adminToken,
    output: () => `${entry.stdout()}${entry.stderr()}`,
    logged: (pattern) => entry.logged(pattern) || pattern.test(entry.stdout()),
    running: () => entry.running(),
    api(route, init = {}) {
      const headers = new Headers(init.headers);
      headers.set('authorization', `Bearer ${adminToken}`);
      if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
      return fetch(`${apiBase}${route}`, { ...init, headers });
    },
    exited,
    async stop(options = {}) {
      if (entry.running()) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      const { code } = await exited;
      clearTimeout(timer);
      if (!options.keepDoubles) await stopDoubles();
      return code;
    },
    async kill() {
      entry.kill();
      await exited;
      await stopDoubles();
    },
  };
}

async function waitUntilReady(service: RunningNocturne, readyLine: boolean): Promise<void> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!service.running()) throw new Error(`npm start ended (${JSON.stringify(await service.exited)}) before it was ready:\n${service.output()}`);
    const ready = await fetch(`${service.apiBase}/readyz`, { signal: AbortSignal.timeout(READY_TIMEOUT_MS) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready && (!readyLine || service.logged(/Nocturne is ready/))) return;
    if (performance.now() > deadline) {
      await service.kill();
      throw new Error(`npm start was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${service.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
}
