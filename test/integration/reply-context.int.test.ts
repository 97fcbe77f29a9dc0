/**
 * The reply context's budget rules on the composed service (`startService`, a real SQLite store,
 * the loopback Anthropic double recording each request): a memory and the episode it was learned
 * from never both go into the prompt, the turns sent as messages are not repeated as retrieved
 * context, and a turn older than the 24-hour window that the search finds is there.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../../src/config/load-config';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { startService, type RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SeenLlmRequest } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const DAY_MS = 86_400_000;
const SCOPE = 'test:reply-context';
const CAT_TURN = "My sister's cat is called Pumpernickel.";
const CAT_MEMORY = "The person's sister has a cat named Pumpernickel";
const JOB_TURN = 'I started a new job at the Lisbon aquarium.';

const sentText = (r: SeenLlmRequest) => [r.system ?? '', ...r.messages.map((m) => m.text)].join('\n');
const count = (text: string, needle: string) => text.split(needle).length - 1;

describe('reply context: dedupe and the working conversation (integration)', () => {
  const logs = memoryLogger();
  const root = tempDir('nocturne-int-reply-context-');
  let double: AnthropicDouble;
  let service: RunningService;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    const config = loadConfig({
      env: {
        DATA_DIR: path.join(root, 'data'),
        TZ: 'UTC',
        ANTHROPIC_API_KEY: 'sk-ant-test-reply-context',
        ANTHROPIC_BASE_URL: double.url,
        TERMINAL: 'off',
        SLEEP_ENABLED: 'false',
        LOG_FORMAT: 'json',
      },
      envFile: false,
    });
    service = await startService(config, logs.logger, { input: new PassThrough(), output: new PassThrough() });
    const { core } = service;
    const then = Date.now() - 3 * DAY_MS;
    await core.episodeService.ingestMany(
      { key: SCOPE, channel: 'test' },
      [CAT_TURN, JOB_TURN].map((content, i) =>
        core.episodeService.normalize(
          { content, author: 'Me', externalId: `told-${i}`, timestamp: new Date(then + i * 60_000).toISOString(), conversationId: 'three-days-ago' },
          'test',
        ),
      ),
    );
    const scope = (await core.directory.findByKey(SCOPE))!;
    const cat = (await core.db.prisma.episode.findFirst({ where: { scopeId: scope.id, externalId: 'told-0' } }))!;
    await core.db.prisma.$transaction((tx) =>
      createMemory(
        tx,
        { scopeId: scope.id, category: 'fact', content: CAT_MEMORY, confidence: 0.9, sourceEpisodeIds: [cat.id] },
        { now: new Date(), reason: 'learned from the turn' },
      ),
    );
    await core.embeddingWorker.drain();
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const ask = async (text: string, n: number): Promise<string> => {
    double.reset();
    await service.agent.handle({
      channel: 'test',
      scopeKey: SCOPE,
      scopeKind: 'private',
      authorId: 'me',
      authorName: 'Me',
      text,
      timestamp: new Date(),
      externalId: `ask-${n}`,
    });
    const request = double.requests.find((r) => r.messages.some((m) => m.text.includes(text)));
    expect(request).toBeDefined();
    return sentText(request!);
  };

  it('shows a memory or the episode it was learned from, never both', async () => {
    const sent = await ask("What is my sister's cat called?", 1);
    expect(sent).toContain(CAT_MEMORY);
    expect(sent).not.toContain(CAT_TURN);
  }, 60_000);

  it('finds a turn older than a day that no memory states', async () => {
    expect(await ask('Where did I start my new job?', 2)).toContain(JOB_TURN);
  }, 60_000);

  it('does not repeat the turns sent as messages among the retrieved ones', async () => {
    const told = 'I adopted a parrot named Quillonbert last week.';
    await ask(told, 3);
    const sent = await ask('What is my parrot called?', 4);
    // Once, as a message of the working conversation; not again as an "(earlier)" line.
    expect(count(sent, 'Quillonbert')).toBe(1);
    expect(sent).not.toMatch(/\(earlier\)[^\n]*Quillonbert/);
  }, 60_000);
});
