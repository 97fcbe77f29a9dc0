/**
 * Deep recall end to end: memories that have faded are found only when asked for — the person
 * writes "do you remember…" in the terminal, the model calls memory_search with includeFaded, or
 * the person lists /memories --all (terminal and Telegram) — they are marked faded wherever they
 * show, and one recalled for a reply is revived through the memory writer, audited. The requests
 * are the ones the real Anthropic SDK sent to the loopback double; the stores are real SQLite
 * files with the full-text index and sqlite-vec.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent } from '../../src/agent/agent';
import type { ConversationHandler } from '../../src/channels/conversation-handler';
import { createTerminalChannel, type TerminalChannel } from '../../src/channels/terminal/terminal-channel';
import type { Core } from '../../src/core';
import type { LlmRequest } from '../../src/llm/language-model';
import { createMemory, decayMemory } from '../../src/memory/memories/memory-writer';
import { agentServices, channelServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { SentMessage } from '../doubles/telegram-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';
import { ANA, converse, startHarness, type Harness } from './telegram-harness';

const KEY = 'terminal:ana';
/** Confidence a memory is decayed to so that it fades (below the writer's 0.1). */
const FADED_CONFIDENCE = 0.05;

/** Stores a memory the owner wrote, then decays it until it fades; returns its id. */
async function fadedMemory(core: Core, scopeId: string, category: string, content: string): Promise<string> {
  const now = new Date(Date.now() - 1_000);
  return core.db.prisma.$transaction(async (tx) => {
    const memory = await createMemory(tx, { scopeId, category, content, confidence: 0.6 }, { by: 'owner', now });
    const faded = await decayMemory(tx, scopeId, memory.id, FADED_CONFIDENCE, { now, reason: 'test: faded' });
    expect(faded.active).toBe(false);
    return memory.id;
  });
}

describe('deep recall through the terminal channel', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let core: Core;
  let channel: TerminalChannel;
  let input: PassThrough;
  let printed = '';
  let scopeId: string;
  const ids: Record<string, string> = {};
  let markers = 0;

  /** Writes a line, then a marker command; returns what was printed up to the marker's answer. */
  async function say(line: string): Promise<string> {
    const from = printed.length;
    const marker = `/marker${markers++}`;
    const markerAnswer = `I do not know ${marker}.`;
    input.write(`${line}\n${marker}\n`);
    const deadline = Date.now() + 30_000;
    while (!printed.slice(from).includes(markerAnswer)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for the answer to ${line}; printed:\n${printed.slice(from)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const text = printed.slice(from);
    return text.slice(0, text.indexOf(markerAnswer));
  }

  const replyRequests = (): LlmRequest[] => h.requests.filter((r) => r.purpose === 'reply');
  /** Everything a request showed the model, as one text. */
  const shown = (r: LlmRequest) => JSON.stringify([r.system, r.messages]);
  const memoryRow = (id: string) => core.db.prisma.memory.findUniqueOrThrow({ where: { id } });
  const revivals = (id: string) => core.db.prisma.auditEvent.findMany({ where: { scopeId, subjectId: id, action: 'revive' } });

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel({})(seen) });
    h = await openAgentCore({ dataDir: tempDir('nocturne-deep-recall-'), provider: 'anthropic', url: double.url });
    core = h.core;
    const agent = createAgent(agentServices(core));
    const handler: ConversationHandler = {
      reply: async (message) => (await agent.handle(message)).text,
      end: (key: string) => agent.endConversation(key, '/end').then(() => undefined),
    };
    scopeId = (await core.scopes.ensure({ key: KEY, channel: 'terminal', kind: 'user' })).id;
    const now = new Date();
    ids.tea = (
      await core.db.prisma.$transaction((tx) =>
        createMemory(tx, { scopeId, category: 'preference', content: 'Ana drinks green tea every morning', confidence: 0.9 }, { by: 'owner', now }),
      )
    ).id;
    ids.cat = await fadedMemory(core, scopeId, 'relationship', "Ana's sister's cat is called Pumpernickel");
    ids.quince = await fadedMemory(core, scopeId, 'fact', "Ana's grandfather grew quinces in Braga");
    await core.embeddingWorker.drain();

    input = new PassThrough();
    const output = new PassThrough();
    output.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
    channel = createTerminalChannel({
      ...channelServices(core),
      handler,
      input,
      output,
      scopeKey: KEY,
      authorName: 'Ana',
      logger: core.logger,
      defaultTimeZone: 'UTC',
      exportDir: tempDir('nocturne-deep-recall-exports-'),
    });
    void channel.run();
    const deadline = Date.now() + 15_000;
    while (!printed.includes('/quit leaves.\n')) {
      if (Date.now() > deadline) throw new Error(`no greeting; printed:\n${printed}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }, 60_000);

  afterAll(async () => {
    input?.end();
    await channel?.stop();
    await core?.close();
    await double?.stop();
  });

  it('leaves faded memories out of a reply the person did not ask to remember, even on their topic', async () => {
    for (const message of ["My sister's cat was at the vet today", 'What should I cook tonight?']) {
      const before = replyRequests().length;
      expect(await say(message)).toBe(`ok: ${message}\n`);
      const request = replyRequests()[before]!;
      expect(shown(request)).toContain(message.slice(0, 20));
      expect(shown(request)).not.toContain('Pumpernickel');
      expect(shown(request)).not.toContain('faded');
    }
    expect((await memoryRow(ids.cat)).active).toBe(false);
    expect(await revivals(ids.cat)).toHaveLength(0);
  }, 60_000);

  it('puts a faded memory, marked faded, into the prompt when asked "do you remember", and revives it (audited)', async () => {
    const before = replyRequests().length;
    const faded = await memoryRow(ids.cat);
    await say("Do you remember what my sister's cat is called?");
    const request = replyRequests()[before]!;
    expect(request.system).toMatch(/\[relationship, confidence 0\.05, faded\] Ana's sister's cat is called Pumpernickel/);
    // Only what the person's words name comes back: the other faded memory stays out.
    expect(shown(request)).not.toContain('quinces');

    const revived = await memoryRow(ids.cat);
    expect(revived.active).toBe(true);
    expect(revived.confidence).toBeCloseTo(FADED_CONFIDENCE + 0.05, 5);
    expect(revived.reinforcementCount).toBe(faded.reinforcementCount + 1);
    expect(revived.lastAccessedAt!.getTime()).toBeGreaterThan(faded.createdAt.getTime());
    const events = await revivals(ids.cat);
    expect(events).toHaveLength(1);
    expect(events[0]!.reason).toMatch(/recalled: the person asked to remember/);
    expect(events[0]!.before).toMatchObject({ active: false });
    expect(events[0]!.after).toMatchObject({ active: true });
    expect((await memoryRow(ids.quince)).active).toBe(false);
  }, 60_000);

  it('memory_search finds a faded memory only with includeFaded, marks it faded, and revives it', async () => {
    double.script({
      kind: 'tool_use',
      calls: [
        { id: 's1', name: 'memory_search', arguments: { query: 'grandfather quinces' } },
        { id: 's2', name: 'memory_search', arguments: { query: 'grandfather quinces', includeFaded: true } },
      ],
    });
    const before = replyRequests().length;
    await say('Who in my family grew fruit?');
    const afterTools = replyRequests()[before + 1]!;
    const results = afterTools.messages.flatMap((m) => (m.role === 'tool' ? [m.content] : []));
    expect(results).toHaveLength(2);
    expect(results[0]).not.toContain('quinces');
    expect(results[1]).toContain(`${ids.quince} memory [fact, confidence 0.05, faded] Ana's grandfather grew quinces in Braga`);
    expect((await memoryRow(ids.quince)).active).toBe(true);
    const events = await revivals(ids.quince);
    expect(events).toHaveLength(1);
    expect(events[0]!.reason).toMatch(/memory_search with includeFaded/);
    expect(h.requests[0]!.tools?.find((t) => t.name === 'memory_search')?.parameters).toMatchObject({ properties: { includeFaded: { type: 'boolean' } } });
  }, 60_000);

  it('/memories --all lists faded memories after the current ones, marked [faded], without reviving them', async () => {
    const faded = await fadedMemory(core, scopeId, 'fact', 'Ana once owned a red bicycle');
    await core.embeddingWorker.drain();
    const current = await say('/memories');
    expect(current).not.toContain('red bicycle');
    const all = await say('/memories --all');
    expect(all).toMatch(/^Memories, faded ones too 1–4 of 4 \(page 1\/1\)/);
    expect(all).toMatch(/\n4\. \[faded\] Ana once owned a red bicycle\n {4}fact · confidence 0\.05 · from /);
    expect(all).toContain('1. Ana drinks green tea every morning');
    expect(all).not.toMatch(/\[faded\] Ana drinks green tea/);
    expect((await memoryRow(faded)).active).toBe(false);
    // Numbers mean what the person saw: /why 4 explains the faded one.
    expect(await say('/why 4')).toContain('red bicycle');
  }, 60_000);
});

describe('deep recall on Telegram', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await converse(h.fake, ANA, 'hello');
    const scopeId = (await h.core.db.prisma.scope.findUniqueOrThrow({ where: { key: `telegram:private:${ANA.id}` } })).id;
    await h.core.db.prisma.$transaction((tx) =>
      createMemory(tx, { scopeId, category: 'fact', content: 'Ana plays the cello', confidence: 0.8 }, { by: 'owner', now: new Date() }),
    );
    await fadedMemory(h.core, scopeId, 'fact', 'Ana once lived above a bakery in Porto');
  }, 60_000);
  afterAll(async () => h?.close());

  it('/memories --all lists the faded memory marked [faded], and its buttons keep --all', async () => {
    const [current] = await converse(h.fake, ANA, '/memories');
    expect(current).not.toContain('bakery');
    const [all] = await converse(h.fake, ANA, '/memories --all');
    expect(all).toMatch(/^Memories, faded ones too 1–2 of 2/);
    expect(all).toContain('1. Ana plays the cello');
    expect(all).toContain('2. [faded] Ana once lived above a bakery in Porto');
    const sent: SentMessage = h.fake.sent(ANA.id).at(-1)!;
    const data = (sent.reply_markup?.inline_keyboard ?? []).flat().map((b) => ('callback_data' in b ? b.callback_data : ''));
    expect(data.every((d) => d === '' || /^mem:\d+\+:/.test(d))).toBe(true);
  }, 60_000);
});
