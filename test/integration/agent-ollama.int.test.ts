/**
 * The agent end to end through the real `ollama` client and the loopback Ollama server: a reply
 * with a tool round (Ollama's tool calls carry no ids; results go back by tool name), the
 * pre-compaction flush asked as JSON (`format: "json"`), and the family estimator for llama.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

describe('agent loop (Ollama double)', () => {
  let double: OllamaDouble;
  let h: AgentCore;
  let agent: Agent;
  let now = new Date('2026-05-01T10:00:00Z');
  let n = 0;
  const say = (text: string) => {
    now = new Date(now.getTime() + 60_000);
    return agent.handle({
      channel: 'telegram',
      scopeKey: 'telegram:group:-100',
      scopeKind: 'group',
      authorName: n % 2 === 0 ? 'Ana' : 'Luis',
      authorId: String(n),
      text,
      timestamp: now,
      externalId: `o${n++}`,
    });
  };

  beforeAll(async () => {
    double = await startOllamaDouble({
      responder: (seen) =>
        agentModel({ fact: (text) => (/I play the (\w+)/.exec(text) ? `Someone in the group plays the ${/I play the (\w+)/.exec(text)![1]}` : undefined) })(
          seen,
        ),
    });
    h = await openAgentCore({
      dataDir: tempDir(),
      provider: 'ollama',
      url: double.url,
      env: { AGENT_CONTEXT_TOKENS: '2400', AGENT_RECENT_TURNS: '4', AGENT_ANSWER_TOKENS: '200', AGENT_MEMORY_TOKENS: '300', AGENT_SUMMARY_TOKENS: '300' },
    });
    agent = createAgent({ ...agentServices(h.core), options: { clock: () => now } });
  });
  afterAll(async () => {
    await h?.core.close();
    await double?.stop();
  });

  it('answers with a tool round, authors shown in a group', async () => {
    double.scriptChat({
      kind: 'tool_use',
      calls: [{ name: 'memory_update', arguments: { mode: 'create', content: 'Ana plays the cello', category: 'skill' } }],
    });
    double.scriptChat({ kind: 'text', text: 'Noted, Ana!' });
    const reply = await say('I play the cello, remember that');
    expect(reply.text).toBe('Noted, Ana!');
    expect(reply.toolCalls).toEqual(['memory_update']);
    expect(agent.budget.contextTokens).toBe(2400);
    const [first, second] = double.chatRequests.slice(-2);
    expect(first!.tools).toEqual(['memory_search', 'memory_get', 'memory_save', 'memory_update', 'reminder_set', 'reminder_list', 'reminder_cancel']);
    expect(first!.messages.at(-1)!.text).toBe('Ana: I play the cello, remember that');
    expect(second!.messages.at(-1)).toMatchObject({ role: 'tool', toolName: 'memory_update' });
    expect(second!.messages.at(-1)!.text).toMatch(/^created memory /);
    expect(await h.core.db.prisma.memory.count({ where: { content: 'Ana plays the cello' } })).toBe(1);
    expect(reply.tokens!.total).toBeLessThanOrEqual(2400);
    const line = h
      .lines()
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.message === 'reply')!;
    expect(line.family).toBe('llama');
    expect(line.reportedInput).toBe(reply.reported.inputTokens);
  });

  it('flushes as JSON and compacts through Ollama', async () => {
    let i = 0;
    let reply;
    do reply = await say(`message ${i++}: I play the ${['drums', 'piano', 'flute'][i % 3]} on weekends and we talk about music a lot here.`);
    while (reply.compaction === undefined && i < 200);
    expect(reply.compaction).toBe('compacted');
    const flush = double.chatRequests.find((r) => r.system?.includes('Some turns are about to leave'))!;
    expect(flush.json).toBe(true);
    expect(await h.core.db.prisma.memory.count({ where: { content: { startsWith: 'Someone in the group plays the' } } })).toBeGreaterThan(0);
    const conversation = await h.core.db.prisma.conversation.findFirstOrThrow({ where: { status: 'open' } });
    expect(conversation.summary).toMatch(/^Summary so far/);
  });
});
