/**
 * What the Telegram webhook tests share: free ports, a model double whose replies name the
 * message they answer (`re: <tag>`) and that gives consolidation a small valid plan, and
 * `npm start` (src/main.ts under node + tsx, as run-process does) in webhook mode.
 */
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText, likesPlan } from '../doubles/llm-script';
import { startEntry, waitFor, type Entry } from '../chaos/crash-support';
import { cleanEnv } from '../support/run-process';

export { freePort } from '../chaos/chaos-support';

/** The tag a message carries (`c3#7`): its chat and its number there. */
export const TAG = /\bc(\d+)#(\d+)\b/;

/**
 * A model whose reply repeats the tag of the message it answers (`re: c0#1 ...` at once, or after
 * `replyDelayMs` the echo of the message, tag included); consolidation turns "I really like X"
 * into a preference memory.
 */
export function startTaggingModel(options: { replyDelayMs?: number } = {}): Promise<AnthropicDouble> {
  return startAnthropicDouble({
    responder: (seen) => {
      if (seen.system?.includes('memory consolidation system')) return likesPlan(seen.messages[0]?.text ?? '');
      if (seen.tools.length === 0) return { kind: 'text', text: '{}' };
      if (options.replyDelayMs) return { kind: 'hang', ms: options.replyDelayMs };
      const tag = TAG.exec(lastUserText(seen.messages))?.[0] ?? 'c?#?';
      return { kind: 'text', text: `re: ${tag} Thanks, noted.` };
    },
  });
}

export const WEBHOOK_SECRET = 'tg-webhook-secret_0123456789abcdef';

/** The environment of one replica in webhook mode; `extra` adds or overrides settings. */
export function webhookEnv(params: {
  dataDir: string;
  port: number;
  apiRoot: string;
  token: string;
  modelUrl: string;
  ollamaUrl: string;
  allowedUsers: readonly number[];
  extra?: Record<string, string>;
}): NodeJS.ProcessEnv {
  return cleanEnv({
    DATA_DIR: params.dataDir,
    TERMINAL: 'off',
    TELEGRAM_BOT_TOKEN: params.token,
    TELEGRAM_API_ROOT: params.apiRoot,
    TELEGRAM_ALLOWED_USERS: params.allowedUsers.join(','),
    TELEGRAM_MODE: 'webhook',
    // The public address a load balancer would have; the fake Bot API is told where to deliver.
    TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram',
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    API_HOST: '127.0.0.1',
    WEBHOOK_PORT: String(params.port),
    ANTHROPIC_API_KEY: 'sk-ant-webhook-test-000000000000',
    ANTHROPIC_BASE_URL: params.modelUrl,
    EMBEDDER: 'ollama',
    EMBEDDING_MODEL: 'nomic-embed-text',
    OLLAMA_HOST: params.ollamaUrl,
    LOG_LEVEL: 'info',
    ...params.extra,
  });
}

/** Starts `npm start` (main.ts) and waits for "Nocturne is ready"; throws with its output if it ends first. */
export async function startReplica(env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<Entry> {
  const entry = startEntry('src/main.ts', [], env);
  const ready = await waitFor(() => entry.logged(/Nocturne is ready/), { timeoutMs, intervalMs: 50, stop: () => !entry.running() });
  if (!ready) {
    entry.kill();
    throw new Error(`the replica did not become ready:\n${entry.stderr()}\n${entry.stdout()}`);
  }
  return entry;
}

/** Stops a replica with SIGTERM and waits for it (SIGKILL after `ms`). */
export async function stopReplica(entry: Entry, ms = 15_000): Promise<void> {
  if (!entry.running()) return;
  entry.child.kill('SIGTERM');
  const timer = setTimeout(() => entry.kill(), ms);
  await entry.ended;
  clearTimeout(timer);
}
