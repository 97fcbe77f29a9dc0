/**
 * The LanguageModel contract: what every adapter must do, run against the Anthropic and the
 * Ollama adapters through their real SDKs and loopback servers. Each test file passes a harness
 * that starts its server, scripts replies in a provider-neutral way and builds the model.
 *
 * Retry delays are recorded and shortened (an injected `sleep`), so the policy is checked
 * exactly without the suite waiting for it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { LlmError, type LanguageModel, type LlmProvider, type LlmRequest, type LlmTool } from '../../src/llm/language-model';
import type { RetryPolicy } from '../../src/llm/retry';
import { answerSchemaOf } from '../../src/llm/answer-schema';
import { completeStructured } from '../../src/llm/structured';
import { tokensUsedSince, withUsageRecording } from '../../src/llm/usage-recorder';
import type { Logger } from '../../src/shared/logger';
import { openDatabase, type Database } from '../../src/storage/database';
import type { ScriptedLlmReply, SeenLlmRequest } from '../doubles/llm-script';
import { sqliteDatabase } from '../support/databases';
import { memoryLogger } from '../support/logger';

export interface LanguageModelHarness {
  readonly provider: LlmProvider;
  /** The model name the harness configures. */
  readonly modelName: string;
  /** Chat requests the server received, in order. */
  readonly requests: readonly SeenLlmRequest[];
  script(reply: ScriptedLlmReply, times?: number): void;
  /** Makes the server refuse answer schemas (a server without structured outputs), or stop refusing. */
  refuseSchemas(on: boolean): void;
  reset(): void;
  /** A model for this server (or for `baseUrl`), built through the config factory. */
  createModel(deps: { readonly retry: Partial<RetryPolicy>; readonly logger: Logger; readonly baseUrl?: string }): LanguageModel;
  stop(): Promise<void>;
}

export interface LanguageModelContractInit {
  readonly name: string;
  readonly start: () => Promise<LanguageModelHarness>;
}

const SEARCH_TOOL: LlmTool = {
  name: 'search_memory',
  description: 'Searches what the user told us before.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

const FACTS = z.object({ facts: z.array(z.string()).min(1) });

/** A retry policy whose waits are recorded and cut to a few milliseconds. */
function fastRetry(overrides: Partial<RetryPolicy> = {}): { retry: Partial<RetryPolicy>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    retry: {
      baseDelayMs: 40,
      maxDelayMs: 200,
      timeoutMs: 5_000,
      random: () => 0.5,
      sleep: async (ms) => {
        delays.push(ms);
        await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 5)));
      },
      ...overrides,
    },
  };
}

async function failure(promise: Promise<unknown>): Promise<LlmError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(LlmError);
  return error as LlmError;
}

async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export function describeLanguageModelContract(init: LanguageModelContractInit): void {
  describe(`language model contract: ${init.name}`, () => {
    let harness: LanguageModelHarness;

    beforeAll(async () => {
      harness = await init.start();
    });
    afterAll(async () => {
      await harness?.stop();
    });
    beforeEach(() => harness.reset());

    function model(overrides: Partial<RetryPolicy> = {}) {
      const { retry, delays } = fastRetry(overrides);
      const { logger, lines } = memoryLogger();
      return { llm: harness.createModel({ retry, logger }), delays, lines };
    }

    const ask = (content: string, extra: Partial<LlmRequest> = {}): LlmRequest => ({ messages: [{ role: 'user', content }], purpose: 'test', ...extra });

    it('answers plain text, with usage, stop reason, provider and model', async () => {
      harness.script({ kind: 'text', text: 'Hello there.', inputTokens: 21, outputTokens: 3 });
      const { llm } = model();
      expect(llm).toMatchObject({ provider: harness.provider, model: harness.modelName });
      expect(llm.contextWindow).toBeGreaterThanOrEqual(8192);
      const response = await llm.complete(ask('Say hello', { system: 'You are terse.', temperature: 0.2 }));
      expect(response).toMatchObject({
        text: 'Hello there.',
        toolCalls: [],
        stopReason: 'end',
        usage: { inputTokens: 21, outputTokens: 3 },
        provider: harness.provider,
        model: harness.modelName,
      });
      expect(response.durationMs).toBeGreaterThanOrEqual(0);
      expect(harness.requests).toHaveLength(1);
      const seen = harness.requests[0]!;
      expect(seen).toMatchObject({ model: harness.modelName, maxTokens: 1024, temperature: 0.2, tools: [], messages: [{ role: 'user', text: 'Say hello' }] });
      expect(seen.system).toBe('You are terse.');
    });

    it('passes maxTokens and reports an answer cut off by it', async () => {
      harness.script({ kind: 'text', text: 'Once upon a', stop: 'max_tokens' });
      const response = await model().llm.complete(ask('Tell a story', { maxTokens: 3 }));
      expect(response.stopReason).toBe('max_tokens');
      expect(harness.requests[0]!.maxTokens).toBe(3);
    });

    it('keeps a multi-turn conversation in order', async () => {
      await model().llm.complete({
        purpose: 'reply',
        messages: [
          { role: 'user', content: 'My dog is Rex.' },
          { role: 'assistant', content: 'Nice name!' },
          { role: 'user', content: 'What is his name?' },
        ],
      });
      expect(harness.requests[0]!.messages).toEqual([
        { role: 'user', text: 'My dog is Rex.' },
        { role: 'assistant', text: 'Nice name!' },
        { role: 'user', text: 'What is his name?' },
      ]);
    });

    it('round-trips a tool call: tools offered, call returned, result sent back', async () => {
      harness.script({ kind: 'tool_use', calls: [{ id: 'toolu_rex', name: 'search_memory', arguments: { query: 'dog name' } }] });
      harness.script({ kind: 'text', text: 'Your dog is Rex.' });
      const { llm } = model();
      const question = { role: 'user', content: 'What is my dog called?' } as const;
      const first = await llm.complete({ purpose: 'reply', messages: [question], tools: [SEARCH_TOOL] });
      expect(first.stopReason).toBe('tool_use');
      expect(first.toolCalls).toEqual([{ id: expect.any(String), name: 'search_memory', arguments: { query: 'dog name' } }]);
      const call = first.toolCalls[0]!;

      const second = await llm.complete({
        purpose: 'reply',
        tools: [SEARCH_TOOL],
        messages: [
          question,
          { role: 'assistant', content: first.text, toolCalls: first.toolCalls },
          { role: 'tool', toolCallId: call.id, name: call.name, content: 'Rex, a beagle' },
        ],
      });
      expect(second).toMatchObject({ text: 'Your dog is Rex.', stopReason: 'end', toolCalls: [] });

      const seen = harness.requests[1]!;
      expect(harness.requests[0]!.tools).toEqual(['search_memory']);
      expect(seen.tools).toEqual(['search_memory']);
      expect(seen.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
      expect(seen.messages[1]!.toolCalls).toEqual([expect.objectContaining({ name: 'search_memory', arguments: { query: 'dog name' } })]);
      const result = seen.messages[2]!;
      expect(result.text).toBe('Rex, a beagle');
      // Anthropic matches results to calls by id, Ollama by tool name: each must get what it matches on.
      if (harness.provider === 'anthropic') expect(result.toolCallId).toBe(call.id);
      else expect(result.toolName).toBe('search_memory');
    });

    it('sends back the results of two calls made in one turn', async () => {
      harness.script({
        kind: 'tool_use',
        text: 'Let me look.',
        calls: [
          { id: 'toolu_a', name: 'search_memory', arguments: { query: 'dog' } },
          { id: 'toolu_b', name: 'search_memory', arguments: { query: 'cat' } },
        ],
      });
      const { llm } = model();
      const first = await llm.complete({ purpose: 'reply', messages: [{ role: 'user', content: 'Pets?' }], tools: [SEARCH_TOOL] });
      expect(first.text).toBe('Let me look.');
      expect(first.toolCalls.map((call) => call.arguments)).toEqual([{ query: 'dog' }, { query: 'cat' }]);
      expect(new Set(first.toolCalls.map((call) => call.id)).size).toBe(2);
      await llm.complete({
        purpose: 'reply',
        tools: [SEARCH_TOOL],
        messages: [
          { role: 'user', content: 'Pets?' },
          { role: 'assistant', content: first.text, toolCalls: first.toolCalls },
          ...first.toolCalls.map((call, i) => ({
            role: 'tool' as const,
            toolCallId: call.id,
            name: call.name,
            content: i === 0 ? 'Rex' : 'none',
            isError: i === 1,
          })),
          { role: 'user', content: 'Thanks' },
        ],
      });
      expect(harness.requests[1]!.messages.map((message) => [message.role, message.text])).toEqual([
        ['user', 'Pets?'],
        ['assistant', 'Let me look.'],
        ['tool', 'Rex'],
        ['tool', 'none'],
        ['user', 'Thanks'],
      ]);
    });

    it('retries a 429 after the wait retry-after asks for, then succeeds', async () => {
      harness.script({ kind: 'status', status: 429, message: 'rate limited, slow down', retryAfter: '2' });
      harness.script({ kind: 'text', text: 'finally' });
      const { llm, delays, lines } = model();
      await expect(llm.complete(ask('busy?'))).resolves.toMatchObject({ text: 'finally' });
      expect(harness.requests.map((request) => request.reply)).toEqual(['status', 'text']);
      expect(delays).toEqual([2_000]);
      const warning = lines()
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.message === 'model call failed, retrying');
      expect(warning).toMatchObject({ level: 'warn', provider: harness.provider, reason: 'rate_limited', status: 429, attempt: 1, delayMs: 2_000 });
    });

    it('caps a retry-after that asks for too long', async () => {
      harness.script({ kind: 'status', status: 429, retryAfter: '3600' });
      const { llm, delays } = model({ maxRetryAfterMs: 3_000 });
      await expect(llm.complete(ask('busy?'))).resolves.toMatchObject({ stopReason: 'end' });
      expect(delays).toEqual([3_000]);
    });

    it('retries a 500 with exponential backoff, then succeeds', async () => {
      harness.script({ kind: 'status', status: 500, message: 'internal error' });
      const { llm, delays } = model();
      await expect(llm.complete(ask('hello'))).resolves.toMatchObject({ text: 'echo: hello' });
      expect(harness.requests).toHaveLength(2);
      expect(delays).toEqual([30]);
    });

    it('gives up on a failing server after maxAttempts, with the attempt count', async () => {
      harness.script({ kind: 'status', status: 503, message: 'unavailable' }, 5);
      const { llm, delays } = model();
      const error = await failure(llm.complete(ask('hello')));
      expect(error).toMatchObject({ reason: 'server', retryable: true, status: 503, attempts: 3, code: 'llm.server', category: 'third_party' });
      expect(error.message).toContain('unavailable');
      expect(harness.requests).toHaveLength(3);
      expect(delays).toEqual([30, 60]);
    });

    it('does not retry a 400', async () => {
      harness.script({ kind: 'status', status: 400, message: 'messages: field required' }, 3);
      const { llm, delays } = model();
      const error = await failure(llm.complete(ask('hello')));
      expect(error).toMatchObject({ reason: 'bad_request', retryable: false, status: 400, attempts: 1 });
      expect(error.message).toContain('messages: field required');
      expect(harness.requests).toHaveLength(1);
      expect(delays).toEqual([]);
    });

    it('does not retry a 401, and reports it as auth', async () => {
      harness.script({ kind: 'status', status: 401, message: 'invalid credentials' }, 3);
      const error = await failure(model().llm.complete(ask('hello')));
      expect(error).toMatchObject({ reason: 'auth', retryable: false, category: 'user', attempts: 1 });
      expect(harness.requests).toHaveLength(1);
    });

    it('times out a slow answer as timeout after a bounded number of attempts', async () => {
      harness.script({ kind: 'hang', ms: 10_000 }, 3);
      const { llm } = model({ timeoutMs: 150, maxAttempts: 2 });
      const started = performance.now();
      const error = await failure(llm.complete(ask('slow')));
      const elapsed = performance.now() - started;
      expect(error).toMatchObject({ reason: 'timeout', retryable: true, attempts: 2, code: 'llm.timeout' });
      expect(error.message).toContain('150 ms');
      expect(harness.requests).toHaveLength(2);
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(3_000);
    });

    it('recovers when only the first answer is too slow', async () => {
      harness.script({ kind: 'hang', ms: 10_000 });
      await expect(model({ timeoutMs: 150 }).llm.complete(ask('slow then fine'))).resolves.toMatchObject({ text: 'echo: slow then fine' });
      expect(harness.requests).toHaveLength(2);
    });

    it('stops at once, without retrying, when the caller aborts', async () => {
      harness.script({ kind: 'hang', ms: 10_000 }, 3);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const started = performance.now();
      const error = await failure(model().llm.complete(ask('cancel me', { signal: controller.signal })));
      expect(error).toMatchObject({ reason: 'aborted', retryable: false });
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(harness.requests).toHaveLength(1);
    });

    it('reports an unreachable server as network, after retrying', async () => {
      const { retry, delays } = fastRetry();
      const llm = harness.createModel({ retry, logger: memoryLogger().logger, baseUrl: await closedPortUrl() });
      const error = await failure(llm.complete(ask('anyone?')));
      expect(error).toMatchObject({ reason: 'network', retryable: true, attempts: 3 });
      expect(delays).toHaveLength(2);
    });

    it('refuses calls after close', async () => {
      const { llm } = model();
      await llm.close();
      await expect(llm.complete(ask('hello'))).rejects.toBeInstanceOf(LlmError);
      expect(harness.requests).toHaveLength(0);
    });

    /**
     * Both ways a structured answer is asked for: with the answer schema (a server with
     * structured outputs), and in the prompt after the server refused the schema (an older Ollama,
     * a model or proxy without them). Extraction and repair behave the same in both.
     */
    for (const mode of ['schema', 'prompt'] as const) {
      describe(`structured output (${mode === 'schema' ? 'answer schema sent' : 'server refuses schemas: prompt, extraction and repair'})`, () => {
        beforeEach(() => harness.refuseSchemas(mode === 'prompt'));

        /** The requests the server answered (in prompt mode the first one of a model is refused). */
        const answered = () => harness.requests.filter((request) => request.reply !== 'refused');

        it('asks for JSON and returns the validated value in one answered call', async () => {
          harness.script({ kind: 'text', text: '{"facts": ["has a dog named Rex"]}' });
          const { value, responses } = await completeStructured(model().llm, ask('Extract facts', { purpose: 'consolidation' }), FACTS);
          expect(value).toEqual({ facts: ['has a dog named Rex'] });
          expect(responses).toHaveLength(1);
          expect(answered()).toHaveLength(1);
          const seen = answered()[0]!;
          expect(seen.json || /JSON/.test(seen.system ?? '')).toBe(true);
          if (mode === 'schema') {
            // The schema that arrives is the one the answer is validated against, in the providers' subset.
            expect(seen.schema).toEqual(answerSchemaOf(FACTS));
            expect(seen.schema).toMatchObject({ type: 'object', additionalProperties: false, required: ['facts'] });
            expect(harness.requests).toHaveLength(1);
          } else {
            expect(seen.schema).toBeUndefined();
            expect(harness.requests.map((request) => [request.reply, request.schema !== undefined])).toEqual([
              ['refused', true],
              ['text', false],
            ]);
          }
        });

        it('tolerates code fences and leading prose', async () => {
          harness.script({ kind: 'text', text: 'Sure! Here are the facts:\n```json\n{"facts": ["likes tea"]}\n```\nAnything else?' });
          const { value, responses } = await completeStructured(model().llm, ask('Extract facts'), FACTS);
          expect(value.facts).toEqual(['likes tea']);
          expect(responses).toHaveLength(1);
        });

        it('repairs malformed JSON once, sending the problem back', async () => {
          harness.script({ kind: 'text', text: '{"facts": ["likes tea",', outputTokens: 7, stop: 'max_tokens' });
          harness.script({ kind: 'text', text: '{"facts": ["likes tea"]}', outputTokens: 9 });
          const { value, responses } = await completeStructured(model().llm, ask('Extract facts'), FACTS);
          expect(value.facts).toEqual(['likes tea']);
          expect(responses.map((response) => response.usage.outputTokens)).toEqual([7, 9]);
          const repair = answered()[1]!;
          expect(repair.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
          expect(repair.messages[1]!.text).toBe('{"facts": ["likes tea",');
          expect(repair.messages[2]!.text).toContain('not valid JSON');
          // The repair asks in the same way as the first call did.
          expect(repair.schema).toEqual(mode === 'schema' ? answerSchemaOf(FACTS) : undefined);
        });

        it('repairs an answer that does not match the schema', async () => {
          harness.script({ kind: 'text', text: '{"facts": "likes tea"}' });
          harness.script({ kind: 'text', text: '{"facts": ["likes tea"]}' });
          const { responses } = await completeStructured(model().llm, ask('Extract facts'), FACTS);
          expect(responses).toHaveLength(2);
          expect(answered()[1]!.messages[2]!.text).toMatch(/does not match[\s\S]*facts/);
        });

        it('fails as invalid_output after exactly one repair, quoting a truncated answer', async () => {
          const rambling = `I cannot do that. ${'blah '.repeat(400)}`;
          harness.script({ kind: 'text', text: 'no JSON here' });
          harness.script({ kind: 'text', text: rambling });
          harness.script({ kind: 'text', text: '{"facts": ["too late"]}' });
          const error = await failure(completeStructured(model().llm, ask('Extract facts', { purpose: 'consolidation' }), FACTS));
          expect(error).toMatchObject({ reason: 'invalid_output', retryable: false, code: 'llm.invalid_output' });
          expect(error.message).toContain('consolidation');
          expect(error.message).toContain('I cannot do that.');
          expect(error.message.length).toBeLessThan(1_200);
          expect(answered()).toHaveLength(2);
        });

        if (mode === 'prompt') {
          it('falls back once per model: logs it once and stops sending schemas to that model', async () => {
            const { llm, lines } = model();
            harness.script({ kind: 'text', text: '{"facts": ["one"]}' });
            harness.script({ kind: 'text', text: '{"facts": ["two"]}' });
            await completeStructured(llm, ask('Extract facts'), FACTS);
            await expect(completeStructured(llm, ask('Extract more'), FACTS)).resolves.toMatchObject({ value: { facts: ['two'] } });
            expect(harness.requests.map((request) => [request.reply, request.schema !== undefined])).toEqual([
              ['refused', true],
              ['text', false],
              ['text', false],
            ]);
            const notes = lines().filter((line) => line.includes('refused the answer schema'));
            expect(notes).toHaveLength(1);
            expect(JSON.parse(notes[0]!)).toMatchObject({ level: 'warn', model: harness.modelName });
            // A plain call is not affected by the refusal.
            await llm.complete(ask('hello'));
            expect(harness.requests.at(-1)!.reply).toBe('default');
          });
        } else {
          it('does not take a 400 that is not about the schema for a refusal', async () => {
            harness.script({ kind: 'status', status: 400, message: 'messages: field required' });
            harness.script({ kind: 'text', text: '{"facts": ["not asked again"]}' });
            const error = await failure(completeStructured(model().llm, ask('Extract facts'), FACTS));
            expect(error).toMatchObject({ reason: 'bad_request', status: 400 });
            expect(harness.requests).toHaveLength(1);
          });
        }
      });
    }

    describe('usage recording on a real SQLite database', () => {
      let database: Database;
      let scopeId: string;

      beforeAll(async () => {
        database = await openDatabase({ database: sqliteDatabase(), logger: memoryLogger().logger });
        scopeId = (await database.prisma.scope.create({ data: { key: `test:llm:${harness.provider}`, channel: 'terminal' } })).id;
      });
      afterAll(async () => {
        await database?.close();
      });

      it('writes one row per call, success or failure, and sums tokens per scope', async () => {
        const { logger } = memoryLogger();
        const since = new Date(Date.now() - 1_000);
        const recorded = withUsageRecording(model().llm, database.prisma, logger);
        expect(recorded).toMatchObject({ provider: harness.provider, model: harness.modelName });

        harness.script({ kind: 'text', text: 'done', inputTokens: 120, outputTokens: 30 });
        await recorded.complete(ask('consolidate', { purpose: 'consolidation', scopeId, runId: 'run-1' }));
        harness.script({ kind: 'status', status: 400, message: 'bad request' });
        await failure(recorded.complete(ask('consolidate', { purpose: 'consolidation', scopeId, runId: 'run-1' })));
        harness.script({ kind: 'text', text: '{"facts":', inputTokens: 10, outputTokens: 2 });
        harness.script({ kind: 'text', text: '{"facts": ["x"]}', inputTokens: 12, outputTokens: 4 });
        const structured = await completeStructured(recorded, ask('facts', { purpose: 'reflection', scopeId }), FACTS);
        expect(structured.responses).toHaveLength(2);
        await recorded.complete(ask('unscoped', { purpose: 'digest' }));

        const rows = await database.prisma.llmCall.findMany({ where: { scopeId }, orderBy: { createdAt: 'asc' } });
        expect(rows).toHaveLength(4);
        expect(rows[0]).toMatchObject({
          purpose: 'consolidation',
          provider: harness.provider,
          model: harness.modelName,
          inputTokens: 120,
          outputTokens: 30,
          status: 'ok',
          error: null,
          runId: 'run-1',
        });
        expect(rows[1]).toMatchObject({ purpose: 'consolidation', status: 'error', inputTokens: 0, outputTokens: 0, runId: 'run-1' });
        expect(rows[1]!.error).toContain('llm.bad_request');
        expect(rows.slice(2).map((row) => [row.purpose, row.inputTokens, row.outputTokens])).toEqual([
          ['reflection', 10, 2],
          ['reflection', 12, 4],
        ]);
        for (const row of rows) expect(row.durationMs).toBeGreaterThanOrEqual(0);

        await expect(tokensUsedSince(database.prisma, scopeId, since)).resolves.toBe(120 + 30 + 10 + 2 + 12 + 4);
        await expect(tokensUsedSince(database.prisma, scopeId, new Date(Date.now() + 60_000))).resolves.toBe(0);
        await expect(database.prisma.llmCall.count({ where: { scopeId: null, purpose: 'digest' } })).resolves.toBe(1);
      });

      it('logs, and does not fail the call, when the row cannot be written', async () => {
        const { logger, lines } = memoryLogger();
        const recorded = withUsageRecording(model().llm, database.prisma, logger);
        harness.script({ kind: 'text', text: 'still answered' });
        // No such scope: the foreign key refuses the row.
        await expect(recorded.complete(ask('hi', { scopeId: 'no-such-scope' }))).resolves.toMatchObject({ text: 'still answered' });
        expect(lines().some((line) => line.includes('could not record model usage'))).toBe(true);
      });
    });
  });
}
