/**
 * Pictures on the model port, through the real SDKs against the loopback doubles: a user turn's
 * images reach Anthropic as base64 image blocks before the words and Ollama as the message's
 * `images`; the image describer returns the model's words cut to its cap, and treats a model that
 * refuses the image (the API's 400) as blind from then on, without asking again.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { capText, createImageDescriber } from '../../src/agent/image-describer';
import { createLanguageModel } from '../../src/llm/create-language-model';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { memoryLogger } from '../support/logger';

const PICTURE = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 5]);
const quick = { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 1 };

describe('images on the model port', () => {
  let anthropic: AnthropicDouble;
  let ollama: OllamaDouble;

  beforeAll(async () => {
    anthropic = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'A red bicycle against a yellow wall.' }) });
    ollama = await startOllamaDouble({ chatModels: ['llava'], responder: () => ({ kind: 'text', text: 'A red bicycle against a yellow wall.' }) });
  });

  afterAll(async () => {
    await anthropic?.stop();
    await ollama?.stop();
  });

  const anthropicModel = () =>
    createLanguageModel(
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        timeoutMs: 5_000,
        anthropicApiKey: 'sk-ant-images-000000000',
        anthropicBaseUrl: anthropic.url,
        ollamaHost: '',
      },
      { retry: quick },
    );

  it('Anthropic: image blocks first, then the words', async () => {
    const model = anthropicModel();
    const answer = await model.complete({
      purpose: 'describe_image',
      messages: [{ role: 'user', content: 'What is this?', images: [{ mime: 'image/jpeg', base64: PICTURE.toString('base64') }] }],
    });
    expect(answer.text).toBe('A red bicycle against a yellow wall.');
    const content = (anthropic.requests.at(-1)!.body.messages as { content: unknown }[])[0]!.content;
    expect(content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PICTURE.toString('base64') } },
      { type: 'text', text: 'What is this?' },
    ]);
    await model.close();
  });

  it('Ollama: the message carries the images', async () => {
    const model = createLanguageModel({ provider: 'ollama', model: 'llava', timeoutMs: 5_000, ollamaHost: ollama.url }, { retry: quick });
    await model.complete({
      purpose: 'describe_image',
      messages: [{ role: 'user', content: 'What is this?', images: [{ mime: 'image/jpeg', base64: PICTURE.toString('base64') }] }],
    });
    expect(ollama.chatRequests.at(-1)!.messages.at(-1)).toEqual({ role: 'user', text: 'What is this?', images: [PICTURE.toString('base64')] });
    await model.close();
  });

  it('the describer keeps the words under its cap, and stops asking a model that refuses images', async () => {
    const { logger } = memoryLogger();
    const model = anthropicModel();
    const seeing = createImageDescriber({ model, vision: true, maxChars: 20, logger });
    expect(await seeing.describe({ bytes: PICTURE, mime: 'image/jpeg' })).toEqual({ kind: 'described', text: 'A red bicycle\u2026' });
    expect(capText('A red bicycle against a yellow wall.', 20)).toBe('A red bicycle\u2026');

    anthropic.refuseImages(true);
    const before = anthropic.requests.length;
    const blind = createImageDescriber({ model, vision: true, maxChars: 200, logger });
    expect(await blind.describe({ bytes: PICTURE, mime: 'image/jpeg' })).toEqual({ kind: 'blind' });
    expect(await blind.describe({ bytes: PICTURE, mime: 'image/jpeg' })).toEqual({ kind: 'blind' });
    expect(anthropic.requests.length - before).toBe(1);
    expect([seeing.canSee(), blind.canSee()]).toEqual([true, false]);

    const off = createImageDescriber({ model, vision: false, maxChars: 200, logger });
    expect(off.canSee()).toBe(false);
    expect(await off.describe({ bytes: PICTURE, mime: 'image/jpeg' })).toEqual({ kind: 'blind' });
    expect(anthropic.requests.length - before).toBe(1);
    anthropic.refuseImages(false);
    await model.close();
  });
});
