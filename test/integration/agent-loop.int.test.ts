/**
 * The agent loop end to end on real SQLite files, with the real Anthropic SDK talking to the
 * loopback Messages API: the prompt's parts and their order, scope isolation of the prompt and of
 * the memory tools, flush-then-compact (once per cycle, a failed flush cancels), restart
 * continuity, conversation end, and degradation (model down, retrieval down, bad input).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { LLM_UNAVAILABLE_TEXT } from '../../src/agent/degraded-replies';
import { agentServices } from '../../src/service';
import { HEADINGS } from '../../src/agent/prompt-builder';
import type { Core } from '../../src/core';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore, type ModelRules } from './agent-harness';

const A = 'telegram:private:1';
const B = 'telegram:private:2';

describe('agent loop (Anthropic double)', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let core: Core;
  let agent: Agent;
  const rules: ModelRules = {};
  let now = new Date('2026-03-02T09:00:00Z');
  const clock = () => now;
  const tick = (minutes: number) => (now = new Date(now.getTime() + minutes * 60_000));
  let counter = 0;
  const say = (text: string, scopeKey = A) => {
    tick(1);
    return agent.handle({
      channel: 'telegram',
      scopeKey,
      scopeKind: 'private',
      authorName: 'Ana',
      authorId: '1',
      text,
      timestamp: now,
      externalId: `m${counter++}`,
    });
  };
  const scopeId = async (key: string) => (await core.scopes.findByKey(key))!.id;
  const replyRequests = () => h.requests.filter((r) => r.purpose === 'reply');

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel(rules)(seen) });
    h = await openAgentCore({ dataDir: tempDir(), provider: 'anthropic', url: double.url });
    core = h.core;
    agent = createAgent({ ...agentServices(core), options: { clock } });
    // Two scopes, each with its memories; B's must never reach A's prompt or tools.
    for (const key of [A, B]) await core.scopes.ensure({ key, channel: 'telegram', kind: 'private' });
    const a = await scopeId(A);
    const b = await scopeId(B);
    await core.db.prisma.$transaction(async (tx) => {
      const origin = { by: 'owner' as const, now, reason: 'test' };
      await createMemory(tx, { scopeId: a, category: 'preference', content: "The user's favourite drink is coffee", confidence: 0.9 }, origin);
      await createMemory(tx, { scopeId: a, category: 'fact', content: 'The user lives in Valencia', confidence: 0.8 }, origin);
      await createMemory(tx, { scopeId: a, category: 'goal', content: 'The user is training for the Valencia marathon', confidence: 0.8 }, origin);
      await createMemory(tx, { scopeId: b, category: 'preference', content: "The user's favourite drink is green tea", confidence: 0.95 }, origin);
    });
    await regenerateSoul(core.db.prisma, a, { now });
    await core.embeddingWorker.drain();
  });
  afterAll(async () => {
    await core?.close();
    await double?.stop();
  });

  it("builds the prompt in seed 000 order with this scope's memories only, and records what it injected", async () => {
    await say('hello from the other scope, my drink is green tea', B);
    const reply = await say('What is my favourite drink?');
    expect(reply.degraded).toBeUndefined();
    expect(reply.text).toBe('ok: What is my favourite drink?');
    const request = replyRequests().at(-1)!;
    const system = request.system!;
    const order = [system.indexOf('You are Nocturne'), system.indexOf(HEADINGS.soul), system.indexOf(HEADINGS.goals)];
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
    // The soul states the relevant memory; it is not listed again among the retrieved memories.
    expect(system.slice(system.indexOf(HEADINGS.soul), system.indexOf(HEADINGS.goals))).toContain('favourite drink is coffee');
    expect(system.split('favourite drink is coffee').length).toBe(2);
    expect(system.slice(system.indexOf(HEADINGS.goals))).toContain('Valencia marathon');
    expect(JSON.stringify(request)).not.toMatch(/green tea|other scope/);
    expect(request.messages.at(-1)).toEqual({ role: 'user', content: 'What is my favourite drink?' });
    expect(request.tools?.map((t) => t.name)).toEqual([
      'memory_search',
      'memory_get',
      'memory_save',
      'memory_update',
      'reminder_set',
      'reminder_list',
      'reminder_cancel',
    ]);

    const t = reply.tokens!;
    expect(t.system + t.soul + t.tools + t.memories + t.goals + t.summary + t.recent).toBe(t.prompt);
    expect(t.total).toBeLessThanOrEqual(t.window);
    expect(reply.reported.inputTokens).toBeGreaterThan(0);
    const stored = await core.db.prisma.episode.findUniqueOrThrow({ where: { id: reply.episodeIds.reply! } });
    expect(stored.role).toBe('agent');
    const coffee = await core.db.prisma.memory.findFirstOrThrow({ where: { content: { contains: 'coffee' } } });
    expect((stored.metadata as { injectedMemoryIds: string[] }).injectedMemoryIds).toContain(coffee.id);
    const logLine = h
      .lines()
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.message === 'reply' && l.scope === A)!;
    expect(logLine.tokens).toMatchObject({ soul: t.soul, memories: t.memories, recent: t.recent, reserved: t.reserved });
    expect(logLine.reportedInput).toBe(reply.reported.inputTokens);
    // The figures docs/agent.md quotes (default budgets, Claude's 200k window).
    process.stdout.write(
      `typical turn: ${JSON.stringify(t)}; reported input ${reply.reported.inputTokens} (the double counts characters/4 of the whole request body)\n`,
    );
  });

  it('binds every tool call to the scope: ids of other scopes are not found, a scope argument is refused', async () => {
    const b = await scopeId(B);
    const tea = await core.db.prisma.memory.findFirstOrThrow({ where: { scopeId: b } });
    double.script({
      kind: 'tool_use',
      calls: [
        { id: 't1', name: 'memory_get', arguments: { id: tea.id } },
        { id: 't2', name: 'memory_update', arguments: { mode: 'replace', id: tea.id, content: 'The user hates tea' } },
        { id: 't3', name: 'memory_search', arguments: { query: 'green tea', scope: B } },
      ],
    });
    double.script({
      kind: 'tool_use',
      calls: [
        { id: 't4', name: 'memory_search', arguments: { query: 'favourite drink' } },
        { id: 't5', name: 'memory_save', arguments: { note: 'Ana has a dentist appointment at 17:00 today' } },
        { id: 't6', name: 'memory_update', arguments: { mode: 'create', content: 'The user has a dog called Kira', category: 'relationship' } },
      ],
    });
    const reply = await say('I have a dentist appointment at 17:00 and my dog Kira hates it');
    expect(reply.toolCalls).toEqual(['memory_get', 'memory_update', 'memory_search', 'memory_search', 'memory_save', 'memory_update']);
    const last = double.requests.at(-1)!;
    const results = last.messages.filter((m) => m.role === 'tool').map((m) => m.text);
    expect(results[0]).toMatch(/^not found/);
    expect(results[1]).toMatch(/^not found/);
    expect(results[2]).toMatch(/unknown argument\(s\) scope/);
    expect(results[3]).toContain('coffee');
    expect(results[3]).not.toContain('tea');
    // Nothing of B changed; A got a note for today and an audited memory.
    expect((await core.db.prisma.memory.findUniqueOrThrow({ where: { id: tea.id } })).content).toBe(tea.content);
    expect(await core.db.prisma.memory.count({ where: { scopeId: b } })).toBe(1);
    const a = await scopeId(A);
    const note = await core.db.prisma.episode.findUniqueOrThrow({ where: { id: reply.episodeIds.notes[0]! } });
    expect(note).toMatchObject({ scopeId: a, role: 'agent' });
    expect(note.metadata).toMatchObject({ kind: 'note' });
    const kira = await core.db.prisma.memory.findFirstOrThrow({ where: { content: 'The user has a dog called Kira' } });
    expect(kira.scopeId).toBe(a);
    expect(await core.db.prisma.auditEvent.count({ where: { subjectId: kira.id, action: 'create' } })).toBe(1);
    const sources = await core.db.prisma.memorySource.findMany({ where: { memoryId: kira.id } });
    expect(sources.map((s) => s.episodeId)).toEqual([reply.episodeIds.user]);
  });

  it('stops after four tool rounds', async () => {
    double.script({ kind: 'tool_use', calls: [{ name: 'memory_search', arguments: { query: 'drink' } }] }, 6);
    const before = replyRequests().length;
    const reply = await say('Look it up again and again');
    expect(replyRequests().length - before).toBe(5);
    expect(reply.toolCalls).toHaveLength(4);
    expect(reply.text.length).toBeGreaterThan(0);
    double.reset();
  });

  it('tells the person honestly when the model is down, keeps their message, and carries it into the next reply', async () => {
    rules.fail = { reply: 529 };
    const reply = await say('Are you there?');
    rules.fail = undefined;
    expect(reply.degraded).toBe('llm_unavailable');
    expect(reply.text).toBe(LLM_UNAVAILABLE_TEXT);
    const episode = await core.db.prisma.episode.findUniqueOrThrow({ where: { id: reply.episodeIds.user! } });
    expect(episode.content).toBe('Are you there?');
    expect(await core.db.prisma.llmCall.count({ where: { purpose: 'reply', status: 'error' } })).toBeGreaterThan(0);
    const next = await say('Hello again');
    expect(next.degraded).toBeUndefined();
    expect(replyRequests().at(-1)!.messages.at(-1)!.content).toBe('Are you there?\n\nHello again');
  });

  it('replies without memories when retrieval fails, and refuses invalid messages without crashing', async () => {
    const broken = createAgent({ ...agentServices(core), context: { retrieveContext: () => Promise.reject(new Error('index on fire')) }, options: { clock } });
    tick(1);
    const reply = await broken.handle({ channel: 'telegram', scopeKey: A, scopeKind: 'private', text: 'Still there?', timestamp: now });
    expect(reply.degraded).toBeUndefined();
    expect(reply.tokens!.memories).toBe(0);
    expect(h.lines().some((l) => l.includes('retrieval failed; replying without memories'))).toBe(true);
    const bad = await agent.handle({ channel: '', scopeKey: A, scopeKind: 'martian', text: '' } as never);
    expect(bad.degraded).toBe('invalid_message');
  });
});

describe('compaction and continuity (Anthropic double, small window)', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let agent: Agent;
  const dataDir = tempDir();
  const rules: ModelRules = {
    fact: (text) =>
      /my favourite (\w+) is (\w+)/i.exec(text)
        ? `The user's favourite ${/my favourite (\w+) is (\w+)/i.exec(text)![1]} is ${/my favourite (\w+) is (\w+)/i.exec(text)![2]}`
        : undefined,
  };
  let now = new Date('2026-03-03T09:00:00Z');
  const clock = () => now;
  let n = 0;
  const env = { AGENT_CONTEXT_TOKENS: '2400', AGENT_RECENT_TURNS: '4', AGENT_ANSWER_TOKENS: '200', AGENT_MEMORY_TOKENS: '300', AGENT_SUMMARY_TOKENS: '300' };
  const say = (text: string) => {
    now = new Date(now.getTime() + 60_000);
    return agent.handle({ channel: 'terminal', scopeKey: 'terminal:ana', scopeKind: 'user', authorName: 'Ana', text, timestamp: now, externalId: `c${n++}` });
  };
  const purposes = () => h.requests.map((r) => r.purpose).filter((p) => p.startsWith('compaction'));
  const conversation = async () => h.core.db.prisma.conversation.findFirstOrThrow({ where: { status: 'open' } });
  const filler = (i: number) => `Turn ${i}: a fairly long message about my day, the weather, the bus being late again and what I cooked for dinner tonight.`;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel(rules)(seen) });
    h = await openAgentCore({ dataDir, provider: 'anthropic', url: double.url, env });
    agent = createAgent({ ...agentServices(h.core), options: { clock } });
  });
  afterAll(async () => {
    await h?.core.close();
    await double?.stop();
  });

  it('flushes then compacts, once per cycle; a failed flush cancels the compaction and loses no turn', async () => {
    await say('my favourite colour is green');
    let i = 0;
    while (!purposes().includes('compaction-summary')) await say(filler(i++));
    expect(purposes()).toEqual(['compaction-flush', 'compaction-summary']);
    const after = await conversation();
    expect(after.summary).toMatch(/^Summary so far/);
    const state = after.state as { recentTurnIds: string[]; compaction: { cycle: number; pending: unknown } };
    expect(state.compaction.cycle).toBe(1);
    expect(state.compaction.pending).toBeNull();
    expect(state.recentTurnIds.length).toBeLessThanOrEqual(6);
    // The flushed fact is a memory with the person's turn as its only evidence; the agent's claim was refused.
    const green = await h.core.db.prisma.memory.findFirstOrThrow({
      where: { content: "The user's favourite colour is green" },
      include: { sources: { include: { episode: true } } },
    });
    expect(green.sources.map((s) => s.episode.role)).toEqual(['user']);
    expect(await h.core.db.prisma.memory.count({ where: { content: { contains: 'jazz' } } })).toBe(0);
    // The next reply re-reads memories: the flushed fact is in its prompt.
    await say('what colour do I like?');
    expect(h.requests.filter((r) => r.purpose === 'reply').at(-1)!.system).toContain('favourite colour is green');

    // Within the cooldown nothing happens, however full the context.
    const cycles = purposes().length;
    for (let k = 0; k < 3; k++) await say(filler(i++));
    expect(purposes().length).toBe(cycles);

    // A failed flush cancels the cycle: no summary call, every turn still in full, no cycle counted.
    now = new Date(now.getTime() + 10 * 60_000);
    rules.fail = { flush: 400 };
    const before = (await conversation()).state as { recentTurnIds: string[] };
    let reply;
    do reply = await say(filler(i++));
    while (reply.compaction === undefined);
    rules.fail = undefined;
    expect(reply.compaction).toBe('cancelled');
    expect(purposes().slice(cycles)).toEqual(['compaction-flush']);
    const cancelled = (await conversation()).state as { recentTurnIds: string[]; compaction: { cycle: number; lastFailure: string } };
    expect(cancelled.compaction.cycle).toBe(1);
    expect(cancelled.compaction.lastFailure).toMatch(/scripted flush failure/);
    expect(cancelled.recentTurnIds.slice(0, before.recentTurnIds.length)).toEqual(before.recentTurnIds);
    expect(cancelled.recentTurnIds.length).toBeGreaterThan(before.recentTurnIds.length);

    // After the cooldown the cycle runs once: one flush, one summary.
    now = new Date(now.getTime() + 6 * 60_000);
    const retried = await say(filler(i++));
    expect(retried.compaction).toBe('compacted');
    expect(purposes().slice(cycles)).toEqual(['compaction-flush', 'compaction-flush', 'compaction-summary']);
    expect(((await conversation()).state as { compaction: { cycle: number } }).compaction.cycle).toBe(2);
  });

  it('a summary failure after a successful flush retries the summary without flushing again', async () => {
    now = new Date(now.getTime() + 10 * 60_000);
    const progressive = createAgent({ ...agentServices(h.core), options: { clock, settings: { compactionStrategy: 'progressive-summary' } } });
    rules.fail = { summary: 400 };
    let i = 100;
    const start = purposes().length;
    let reply;
    do {
      now = new Date(now.getTime() + 60_000);
      reply = await progressive.handle({ channel: 'terminal', scopeKey: 'terminal:ana', scopeKind: 'user', text: filler(i++), timestamp: now });
    } while (reply.compaction === undefined);
    rules.fail = undefined;
    expect(reply.compaction).toBe('cancelled');
    expect(purposes().slice(start)).toEqual(['compaction-flush', 'compaction-summary']);
    const pending = ((await conversation()).state as { compaction: { pending: { turnIds: string[] } } }).compaction.pending;
    expect(pending.turnIds.length).toBeGreaterThan(0);
    now = new Date(now.getTime() + 6 * 60_000);
    const done = await progressive.handle({ channel: 'terminal', scopeKey: 'terminal:ana', scopeKind: 'user', text: 'and now?', timestamp: now });
    expect(done.compaction).toBe('compacted');
    expect(purposes().slice(start)).toEqual(['compaction-flush', 'compaction-summary', 'compaction-summary']);
    const state = (await conversation()).state as { recentTurnIds: string[]; compaction: { pending: unknown } };
    expect(state.compaction.pending).toBeNull();
    expect(state.recentTurnIds.some((id) => pending.turnIds.includes(id))).toBe(false);
  });

  it('continues the conversation after a restart: same conversation, its summary and recent turns', async () => {
    const before = await conversation();
    const recent = (before.state as { recentTurnIds: string[] }).recentTurnIds;
    const lastTurns = await h.core.db.prisma.episode.findMany({ where: { id: { in: recent } }, orderBy: { turn: 'asc' } });
    await h.core.close();
    h = await openAgentCore({ dataDir, provider: 'anthropic', url: double.url, env });
    agent = createAgent({ ...agentServices(h.core), options: { clock } });
    const reply = await say('where were we?');
    expect(reply.conversationId).toBe(before.id);
    const request = h.requests.find((r) => r.purpose === 'reply')!;
    expect(request.system).toContain(HEADINGS.summary);
    expect(request.system).toContain(before.summary!.slice(0, 40));
    const shown = request.messages.map((m) => m.content).join('\n');
    for (const e of lastTurns.filter((t) => t.role === 'user')) expect(shown).toContain(e.content);
  });

  it('by default an ended conversation costs no model call: its turns wait for sleep consolidation', async () => {
    await h.core.close();
    h = await openAgentCore({ dataDir: tempDir(), provider: 'anthropic', url: double.url, env: { AGENT_CONTEXT_TOKENS: '2400' } });
    agent = createAgent({ ...agentServices(h.core), options: { clock } });
    await say('my favourite city is Porto');
    const calls = double.requests.length;
    const ended = await agent.endConversation('terminal:ana', 'explicit');
    expect(ended).toMatchObject({ ended: true, memoryId: undefined });
    expect(double.requests.length).toBe(calls);
    expect(await h.core.db.prisma.memory.count()).toBe(0);
    const told = await h.core.db.prisma.episode.findFirstOrThrow({ where: { content: 'my favourite city is Porto' } });
    expect(told.consolidated).toBe(false);
  });

  it('ends a conversation on /end or when idle, with a memory of it (AGENT_END_SUMMARY=true); the next one starts with the memories', async () => {
    await h.core.close();
    h = await openAgentCore({ dataDir: tempDir(), provider: 'anthropic', url: double.url, env: { ...env, AGENT_END_SUMMARY: 'true' } });
    agent = createAgent({ ...agentServices(h.core), options: { clock } });
    await say('my favourite city is Lisbon');
    const ended = await agent.endConversation('terminal:ana', 'explicit');
    expect(ended.ended).toBe(true);
    const row = await h.core.db.prisma.conversation.findUniqueOrThrow({ where: { id: ended.conversationId! } });
    expect(row).toMatchObject({ status: 'ended', endReason: 'explicit' });
    const memory = await h.core.db.prisma.memory.findUniqueOrThrow({ where: { id: ended.memoryId! }, include: { sources: { include: { episode: true } } } });
    expect(memory.content).toBe('The user talked about my favourite city is Lisbon');
    expect(new Set(memory.sources.map((s) => s.episode.role))).toEqual(new Set(['user']));

    const next = await say('Lisbon again: what do you remember about me?');
    expect(next.conversationId).not.toBe(ended.conversationId);
    const lastReply = h.requests.filter((r) => r.purpose === 'reply').at(-1)!;
    expect(lastReply.system).toContain('The user talked about');

    // Idle: an hour without a message ends it in the sweep.
    now = new Date(now.getTime() + 61 * 60_000);
    const swept = await agent.sweepIdle(now);
    expect(swept.ended).toBe(1);
    expect(await h.core.db.prisma.conversation.count({ where: { status: 'open' } })).toBe(0);
  });
});
