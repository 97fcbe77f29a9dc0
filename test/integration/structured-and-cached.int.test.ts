/**
 * The model requests of the real entry points, against the loopback Anthropic double:
 *
 * - `cli chat` (a child process reading stdin): every reply request carries one prompt-cache
 *   breakpoint after the system prompt and the soul (the time and the memories come after it, so
 *   the cached text is the same for the next message); the double reports the cached prefix as
 *   written, then read, and the LlmCall rows and `/metrics` of `npm start` show those tokens.
 * - `cli sleep` (a child process): each consolidation request carries the answer schema, the one
 *   the answer is validated against; with the double refusing schemas the first request is
 *   refused, the rest of the night asks in the prompt, and the switch is logged once.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { answerSchemaOf } from '../../src/llm/answer-schema';
import { consolidationAnswerSchema } from '../../src/sleep/consolidation/operations';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText, likesPlan, type LlmResponder, type SeenLlmRequest } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { cleanEnv, runTs } from '../support/run-process';
import { startNocturne } from '../support/service-harness';

const TOKEN = 'admin-token-structured-cached-0123';

/** Consolidation learns "I really like X"; other JSON requests get an empty object; replies "Noted.". */
const responder: LlmResponder = (seen) => {
  if (seen.system?.includes('memory consolidation system')) return likesPlan(lastUserText(seen.messages));
  if (seen.json || /JSON object/.test(seen.system ?? '')) return { kind: 'text', text: '{}' };
  return { kind: 'text', text: 'Noted.' };
};

const isReply = (request: SeenLlmRequest) => request.tools.length > 0;
const isConsolidation = (request: SeenLlmRequest) => request.system?.includes('memory consolidation system') === true;

function metric(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? Number.NaN : Number(found.slice(line.length + 1));
}

describe('structured answers and prompt caching through the real entry points (loopback Anthropic)', () => {
  let double: AnthropicDouble;
  const root = tempDir('nocturne-structured-cached-');

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder });
  });
  afterAll(async () => {
    await double?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const envFor = (dataDir: string, extra: Record<string, string> = {}) =>
    cleanEnv({
      DATA_DIR: dataDir,
      ANTHROPIC_API_KEY: 'sk-ant-test-structured-cached',
      ANTHROPIC_BASE_URL: double.url,
      SLEEP_ENABLED: 'false',
      LOG_LEVEL: 'warn',
      ...extra,
    });

  it('marks the stable prefix of each reply for the cache and records the cache tokens', async () => {
    double.reset();
    const dataDir = path.join(root, 'chat');
    const chat = await runTs(
      'src/cli/index.ts',
      ['chat', '--scope', 'terminal:me'],
      envFor(dataDir),
      undefined,
      'I really like green tea.\nAnd I really like long walks.\n/quit\n',
    );
    expect(chat.code).toBe(0);

    const replies = double.requests.filter(isReply);
    expect(replies.length).toBeGreaterThanOrEqual(2);
    const systems = replies.map((r) => r.body.system as Array<{ type: string; text: string; cache_control?: unknown }>);
    for (const [i, system] of systems.entries()) {
      expect(Array.isArray(system)).toBe(true);
      expect(system[0]!.cache_control).toEqual({ type: 'ephemeral' });
      expect(system.slice(1).every((block) => block.cache_control === undefined)).toBe(true);
      expect(replies[i]!.cacheBreakpoints).toBe(1);
      // The time changes every minute: it is after the breakpoint, not in the cached text.
      expect(system[0]!.text).not.toContain('Now: ');
      expect(
        system
          .slice(1)
          .map((block) => block.text)
          .join(''),
      ).toContain('Now: ');
    }
    expect(systems[1]![0]!.text).toBe(systems[0]![0]!.text);

    const db = new Database(path.join(dataDir, 'nocturne.db'), { readonly: true });
    const rows = db
      .prepare(`SELECT "inputTokens", "cacheReadTokens", "cacheWriteTokens" FROM "LlmCall" WHERE "purpose" = 'reply' ORDER BY "createdAt"`)
      .all() as Array<{ inputTokens: number; cacheReadTokens: number; cacheWriteTokens: number }>;
    db.close();
    process.stderr.write(`prompt cache: reply rows ${JSON.stringify(rows)}\n`);
    expect(rows.length).toBe(replies.length);
    expect(rows[0]!.cacheWriteTokens).toBeGreaterThan(0);
    expect(rows[0]!.cacheReadTokens).toBe(0);
    expect(rows[1]!.cacheReadTokens).toBe(rows[0]!.cacheWriteTokens);
    // Cached tokens are part of the input: budgets still count everything the model read.
    for (const row of rows) expect(row.inputTokens).toBeGreaterThan(row.cacheReadTokens + row.cacheWriteTokens);

    // npm start on the same store and settings (the chat's embedder included), read through /metrics.
    const service = await startNocturne({
      dataDir,
      anthropic: { use: double },
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-structured-cached', EMBEDDER: 'local', LOG_LEVEL: 'info', ADMIN_TOKEN: TOKEN },
    });
    let text: string;
    try {
      text = await (await service.api('/metrics')).text();
    } finally {
      expect(await service.stop()).toBe(0);
    }
    const read = rows.reduce((n, r) => n + r.cacheReadTokens, 0);
    const written = rows.reduce((n, r) => n + r.cacheWriteTokens, 0);
    expect(metric(text, 'nocturne_llm_cache_tokens_total{kind="read"}')).toBe(read);
    expect(metric(text, 'nocturne_llm_cache_tokens_total{kind="write"}')).toBe(written);
  }, 240_000);

  it('sends the consolidation schema, and falls back to the prompt once when the server refuses it', async () => {
    const schema = answerSchemaOf(consolidationAnswerSchema);
    for (const refusing of [false, true]) {
      double.reset();
      double.refuseSchemas(refusing);
      const dataDir = path.join(root, refusing ? 'sleep-refused' : 'sleep');
      const env = envFor(dataDir);
      const chat = await runTs(
        'src/cli/index.ts',
        ['chat', '--scope', 'terminal:me'],
        env,
        undefined,
        'I really like green tea.\nI really like jazz.\n/quit\n',
      );
      expect(chat.code).toBe(0);
      double.reset();
      double.refuseSchemas(refusing);
      const sleep = await runTs('src/cli/index.ts', ['sleep', '--scope', 'terminal:me'], env);
      expect(sleep.code).toBe(0);

      const consolidation = double.requests.filter(isConsolidation);
      process.stderr.write(
        `structured (${refusing ? 'refusing' : 'accepting'} server): ${consolidation.map((r) => `${r.reply}${r.schema ? '+schema' : ''}`).join(', ')}\n`,
      );
      const notes = sleep.stderr.split('\n').filter((line) => line.includes('refused the answer schema'));
      if (!refusing) {
        expect(consolidation.length).toBeGreaterThanOrEqual(1);
        for (const request of consolidation) expect(request.schema).toEqual(schema);
        expect(consolidation.every((r) => r.reply !== 'refused')).toBe(true);
        expect(notes).toHaveLength(0);
      } else {
        expect(consolidation[0]).toMatchObject({ reply: 'refused', schema });
        expect(consolidation.length).toBeGreaterThanOrEqual(2);
        expect(consolidation.slice(1).every((r) => r.schema === undefined && r.reply !== 'refused')).toBe(true);
        expect(notes).toHaveLength(1);
      }
      const db = new Database(path.join(dataDir, 'nocturne.db'), { readonly: true });
      const memories = db.prepare(`SELECT "content" FROM "Memory"`).all() as Array<{ content: string }>;
      db.close();
      expect(memories.map((m) => m.content).join('\n')).toContain('green tea');
    }
  }, 300_000);
});
