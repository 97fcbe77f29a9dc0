import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ConfigError, type Config } from '../../src/config/load-config';
import { JSON_INSTRUCTION } from '../../src/llm/anthropic-model';
import { contextWindowFor, createLanguageModel } from '../../src/llm/create-language-model';
import { LlmError, type LlmRequest } from '../../src/llm/language-model';
import type { RetryPolicy } from '../../src/llm/retry';
import { completeStructured } from '../../src/llm/structured';
import { withUsageRecording } from '../../src/llm/usage-recorder';
import { openDatabase } from '../../src/storage/database';
import { describeLanguageModelContract } from '../contracts/language-model-contract';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { credentialOf } from '../doubles/llm-script';
import { sqliteDatabase } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { z } from 'zod';

/** Does not look like an Anthropic key, so only its registration as a secret can redact it. */
const API_KEY = 'nocturne-test-key-7Qw2Er9Ty4Ui';
/** The default model (a current one: the SDK warns on every call to deprecated models). */
const MODEL = 'claude-sonnet-4-6';

function llmConfig(url: string, overrides: Partial<Config['llm']> = {}): Config['llm'] {
  return {
    provider: 'anthropic',
    model: MODEL,
    timeoutMs: 5_000,
    anthropicApiKey: API_KEY,
    anthropicBaseUrl: url,
    ollamaHost: 'http://127.0.0.1:9',
    ...overrides,
  };
}

const quick: Partial<RetryPolicy> = { baseDelayMs: 1, maxDelayMs: 2 };

describeLanguageModelContract({
  name: 'anthropic (loopback Messages API)',
  async start() {
    const server = await startAnthropicDouble({ apiKey: API_KEY });
    return {
      provider: 'anthropic',
      modelName: MODEL,
      requests: server.requests,
      script: (reply, times) => server.script(reply, times),
      refuseSchemas: (on) => server.refuseSchemas(on),
      reset: () => server.reset(),
      createModel: ({ retry, logger, baseUrl }) => createLanguageModel(llmConfig(baseUrl ?? server.url), { retry, logger }),
      stop: () => server.stop(),
    };
  },
});

describe('Anthropic adapter specifics', () => {
  let server: AnthropicDouble;

  beforeAll(async () => {
    server = await startAnthropicDouble({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => server.reset());

  const ask = (content: string, extra: Partial<LlmRequest> = {}): LlmRequest => ({ messages: [{ role: 'user', content }], purpose: 'test', ...extra });

  it('posts to /v1/messages with the API key, an API version and no SDK retries', async () => {
    server.script({ kind: 'status', status: 500 });
    const llm = createLanguageModel(llmConfig(server.url), { retry: { ...quick, maxAttempts: 1 } });
    await expect(llm.complete(ask('hi'))).rejects.toMatchObject({ reason: 'server', attempts: 1 });
    expect(server.requests).toHaveLength(1);
    const seen = server.requests[0]!;
    expect(seen.path).toBe('/v1/messages');
    expect(credentialOf(seen.headers)).toBe(API_KEY);
    expect(seen.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(seen.body).toMatchObject({ model: MODEL, max_tokens: 1024 });
    expect(seen.body.stream).toBeFalsy();
  });

  it('maps tools to input_schema, tool calls to tool_use blocks and results to tool_result blocks', async () => {
    const llm = createLanguageModel(llmConfig(server.url), { retry: quick });
    await llm.complete({
      purpose: 'reply',
      tools: [
        { name: 'remember', description: 'Stores a fact.', parameters: { type: 'object', properties: { fact: { type: 'string' } }, required: ['fact'] } },
      ],
      messages: [
        { role: 'user', content: 'Remember I like tea' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_1', name: 'remember', arguments: { fact: 'likes tea' } }] },
        { role: 'tool', toolCallId: 'toolu_1', name: 'remember', content: 'stored', isError: false },
      ],
    });
    const body = server.requests[0]!.body as { tools: unknown[]; messages: { role: string; content: unknown }[] };
    expect(body.tools).toEqual([
      { name: 'remember', description: 'Stores a fact.', input_schema: { type: 'object', properties: { fact: { type: 'string' } }, required: ['fact'] } },
    ]);
    expect(body.messages).toEqual([
      { role: 'user', content: 'Remember I like tea' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'remember', input: { fact: 'likes tea' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'stored' }] },
    ]);
  });

  it('asks for JSON through the system prompt, without prefilling an assistant turn', async () => {
    server.script({ kind: 'text', text: '{"ok": true}' });
    const llm = createLanguageModel(llmConfig(server.url), { retry: quick });
    const { value } = await completeStructured(llm, ask('Is it ok?', { system: 'You check things.' }), z.object({ ok: z.boolean() }));
    expect(value).toEqual({ ok: true });
    const seen = server.requests[0]!;
    expect(seen.system).toBe(`You check things.\n\n${JSON_INSTRUCTION}`);
    expect(seen.messages[seen.messages.length - 1]!.role).toBe('user');
  });

  it('reports a wrong key as auth, without retrying', async () => {
    const llm = createLanguageModel(llmConfig(server.url, { anthropicApiKey: 'wrong-key-0123456789' }), { retry: quick });
    const error = await llm.complete(ask('hi')).then(
      () => undefined,
      (caught: unknown) => caught as LlmError,
    );
    expect(error).toMatchObject({ reason: 'auth', status: 401, attempts: 1 });
    expect(error?.hint).toContain('ANTHROPIC_API_KEY');
    expect(server.requests).toHaveLength(1);
  });

  it('never lets the API key into an error message, a log line or a usage row', async () => {
    const { logger, lines } = memoryLogger();
    const database = await openDatabase({ database: sqliteDatabase(), logger });
    try {
      const llm = withUsageRecording(createLanguageModel(llmConfig(server.url), { retry: quick, logger }), database.prisma, logger);
      // A (misbehaving) server that echoes the key, in retried and in final failures.
      server.script({ kind: 'status', status: 500, message: `upstream rejected key ${API_KEY}` }, 3);
      const retried = await llm.complete(ask('hi')).then(
        () => undefined,
        (caught: unknown) => caught as LlmError,
      );
      server.script({ kind: 'status', status: 401, message: `invalid x-api-key: ${API_KEY}` });
      const auth = await llm.complete(ask('hi')).then(
        () => undefined,
        (caught: unknown) => caught as LlmError,
      );

      for (const error of [retried, auth]) {
        expect(error).toBeInstanceOf(LlmError);
        expect(error!.message).not.toContain(API_KEY);
        expect(error!.message).toContain('[REDACTED]');
        expect(JSON.stringify(error!.details)).not.toContain(API_KEY);
      }
      logger.error('model call failed', { error: auth, details: auth!.details });
      const logged = lines().join('\n');
      expect(logged).toContain('model call failed, retrying');
      expect(logged).not.toContain(API_KEY);
      const rows = await database.prisma.llmCall.findMany();
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(row.error).not.toContain(API_KEY);
    } finally {
      await database.close();
    }
  });

  it('is what the config chooses, with defaults and a clear error without a key', () => {
    const llm = createLanguageModel(llmConfig(server.url, { model: '' }));
    expect(llm).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-6', contextWindow: 200_000 });
    expect(contextWindowFor('anthropic', 'claude-haiku-4-5')).toBe(200_000);
    let thrown: unknown;
    try {
      createLanguageModel(llmConfig(server.url, { anthropicApiKey: undefined }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).issues).toEqual([{ setting: 'ANTHROPIC_API_KEY', problem: 'is required when LLM_PROVIDER=anthropic' }]);
  });
});
