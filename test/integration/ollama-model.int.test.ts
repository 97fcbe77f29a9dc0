import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { Config } from '../../src/config/load-config';
import { contextWindowFor, createLanguageModel } from '../../src/llm/create-language-model';
import type { LlmError, LlmRequest } from '../../src/llm/language-model';
import { createOllamaEmbedder } from '../../src/vectors/embedders/ollama-embedder';
import type { RetryPolicy } from '../../src/llm/retry';
import { describeLanguageModelContract } from '../contracts/language-model-contract';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';

const MODEL = 'llama3.2';

function llmConfig(host: string, overrides: Partial<Config['llm']> = {}): Config['llm'] {
  return { provider: 'ollama', model: MODEL, timeoutMs: 5_000, ollamaHost: host, ...overrides };
}

const quick: Partial<RetryPolicy> = { baseDelayMs: 1, maxDelayMs: 2 };

describeLanguageModelContract({
  name: 'ollama (loopback /api/chat)',
  async start() {
    const server = await startOllamaDouble({ chatModels: [MODEL] });
    return {
      provider: 'ollama',
      modelName: MODEL,
      requests: server.chatRequests,
      script: (reply, times) => server.scriptChat(reply, times),
      refuseSchemas: (on) => server.refuseSchemas(on),
      reset: () => server.reset(),
      createModel: ({ retry, logger, baseUrl }) => createLanguageModel(llmConfig(baseUrl ?? server.url), { retry, logger }),
      stop: () => server.stop(),
    };
  },
});

describe('Ollama adapter specifics', () => {
  let server: OllamaDouble;

  beforeAll(async () => {
    server = await startOllamaDouble({ chatModels: [MODEL, 'qwen2.5:7b'] });
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => server.reset());

  const ask = (content: string, extra: Partial<LlmRequest> = {}): LlmRequest => ({ messages: [{ role: 'user', content }], purpose: 'test', ...extra });

  it('sends a non-streaming /api/chat with format json, num_predict and num_ctx', async () => {
    server.scriptChat({ kind: 'text', text: '{"a": 1}' });
    const llm = createLanguageModel(llmConfig(server.url), { retry: quick });
    await llm.complete(ask('json please', { json: true, maxTokens: 200, system: 'Be exact.' }));
    const seen = server.chatRequests[0]!;
    expect(seen.body).toMatchObject({ model: MODEL, stream: false, format: 'json', options: { num_predict: 200, num_ctx: 8192 } });
    expect(seen.json).toBe(true);
    expect(seen.system).toContain('Be exact.');
    expect((seen.body.messages as { role: string }[])[0]!.role).toBe('system');
  });

  it('maps tools to Ollama function tools and results to tool messages by name', async () => {
    const llm = createLanguageModel(llmConfig(server.url), { retry: quick });
    await llm.complete({
      purpose: 'reply',
      tools: [{ name: 'remember', description: 'Stores a fact.', parameters: { type: 'object', properties: { fact: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'Remember I like tea' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'remember', arguments: { fact: 'likes tea' } }] },
        { role: 'tool', toolCallId: 'call_1', name: 'remember', content: 'stored' },
      ],
    });
    const body = server.chatRequests[0]!.body as { tools: unknown[]; messages: unknown[]; format?: unknown };
    expect(body.format).toBeUndefined();
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'remember', description: 'Stores a fact.', parameters: { type: 'object', properties: { fact: { type: 'string' } } } },
      },
    ]);
    expect(body.messages).toEqual([
      { role: 'user', content: 'Remember I like tea' },
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'remember', arguments: { fact: 'likes tea' } } }] },
      { role: 'tool', content: 'stored', tool_name: 'remember' },
    ]);
  });

  it('does not retry a model that was never pulled, and says how to fix it', async () => {
    const llm = createLanguageModel(llmConfig(server.url, { model: 'not-pulled' }), { retry: quick });
    const error = await llm.complete(ask('hi')).then(
      () => undefined,
      (caught: unknown) => caught as LlmError,
    );
    expect(error).toMatchObject({ reason: 'bad_request', status: 404, attempts: 1 });
    expect(error?.hint).toContain('ollama pull not-pulled');
    expect(server.chatRequests).toHaveLength(1);
  });

  it('is what the config chooses, with the default model and known context windows', async () => {
    expect(createLanguageModel(llmConfig(server.url, { model: '' }))).toMatchObject({ provider: 'ollama', model: 'llama3.2', contextWindow: 8192 });
    const qwen = createLanguageModel(llmConfig(server.url, { model: 'qwen2.5:7b' }), { retry: quick });
    expect(qwen.contextWindow).toBe(32_768);
    await qwen.complete(ask('hi'));
    expect(server.chatRequests[0]!.body).toMatchObject({ model: 'qwen2.5:7b', options: { num_ctx: 32_768 } });
    expect(contextWindowFor('ollama', 'some-new-model:latest')).toBe(8192);
  });

  it('serves chat and embeddings side by side on the same double', async () => {
    const embedder = createOllamaEmbedder({ host: server.url });
    const [vector] = await embedder.embed(['hello']);
    expect(vector).toHaveLength(768);
    await createLanguageModel(llmConfig(server.url), { retry: quick }).complete(ask('hello'));
    expect(server.requests).toHaveLength(1);
    expect(server.chatRequests).toHaveLength(1);
  });
});
