/**
 * What the agent writes during a conversation and what sleep makes of it, end to end: the real
 * agent loop with the real Anthropic SDK against the loopback Messages API, then a real sleep
 * run on the same SQLite file.
 *
 * - a `memory_save` note is the person's words relayed by the agent: it becomes a memory at the
 *   next sleep, learned as "observed", with the note as its evidence (docs/agent.md promises it);
 * - the memory of an ended conversation is a conversation summary, not a fact: the soul's Facts,
 *   the default `/memories` list and the digest leave it out; search and the next reply find it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { renderMemoryList } from '../../src/channels/commands/memories';
import type { Core } from '../../src/core';
import { buildDigest, digestItems } from '../../src/memory/digests/digest';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { uuidv7 } from '../../src/shared/ids';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore, type ModelRules } from './agent-harness';

const KEY = 'telegram:private:7';
const NOTE = 'Ana has a dentist appointment at 17:00 today';

describe('agent notes and conversation summaries through sleep (Anthropic double)', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let core: Core;
  let agent: Agent;
  // The consolidation "model" learns the note, whatever the prompt calls it: the system decides.
  const rules: ModelRules = { learn: (text, who) => (who.startsWith('agent') && text === NOTE ? NOTE : undefined) };
  // After the scope row's real creation time: the digest's first period starts there.
  let now = new Date(Date.now() + 60_000);
  let counter = 0;
  const say = (text: string) => {
    now = new Date(now.getTime() + 60_000);
    return agent.handle({
      channel: 'telegram',
      scopeKey: KEY,
      scopeKind: 'private',
      authorName: 'Ana',
      authorId: '7',
      text,
      timestamp: now,
      externalId: `n${counter++}`,
    });
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel(rules)(seen) });
    h = await openAgentCore({ dataDir: tempDir(), provider: 'anthropic', url: double.url, env: { AGENT_END_SUMMARY: 'true' } });
    core = h.core;
    agent = createAgent({ ...agentServices(core), options: { clock: () => now } });
  });
  afterAll(async () => {
    await core?.close();
    await double?.stop();
  });

  it('a memory_save note becomes an observed memory at the next sleep; the conversation-end record is a summary, not a fact', async () => {
    double.script({ kind: 'tool_use', calls: [{ id: 'n1', name: 'memory_save', arguments: { note: NOTE } }] });
    const told = await say('I have a dentist appointment at 17:00 today, ugh');
    const noteId = told.episodeIds.notes[0]!;
    expect(noteId).toBeDefined();
    const note = await core.db.prisma.episode.findUniqueOrThrow({ where: { id: noteId } });
    expect(note.role).toBe('agent');
    expect(note.metadata).toMatchObject({ kind: 'note', relayedFrom: told.episodeIds.user });

    await say('my favourite city is Lisbon');
    const ended = await agent.endConversation(KEY, 'explicit');
    const summary = await core.db.prisma.memory.findUniqueOrThrow({ where: { id: ended.memoryId! } });
    expect(summary.content).toBe('The user talked about my favourite city is Lisbon');
    expect(summary.category).toBe('conversation');

    const scope = (await core.scopes.findByKey(KEY))!;
    now = new Date(now.getTime() + 3 * 3_600_000);
    const report = await core.sleep.consolidateScope(scope.id, { now, runId: uuidv7(), shouldContinue: () => true, tokenBudgetLeft: Number.POSITIVE_INFINITY });
    expect(report.episodes).toBeGreaterThan(0);
    // "today" is written as the note's local date (relative dates are resolved when learned).
    const learned = await core.db.prisma.memory.findFirstOrThrow({
      where: { scopeId: scope.id, content: { startsWith: 'Ana has a dentist appointment at 17:00 on ' } },
      include: { sources: true },
    });
    expect(learned.sourceType).toBe('observed');
    expect(learned.sources.map((s) => s.episodeId)).toEqual([noteId]);

    // Not a fact of the soul, the default /memories list or the digest ...
    const soul = await regenerateSoul(core.db.prisma, scope.id, { now });
    expect(soul.soul).toContain(learned.content);
    expect(soul.soul).not.toContain('talked about');
    const list = await renderMemoryList(core.catalog, { id: scope.id, timeZone: 'UTC' }, 0, null);
    expect(list.text).toContain(learned.content);
    expect(list.text).not.toContain('talked about');
    const digest = await buildDigest(core.db.prisma, scope.id, { periodEnd: new Date(now.getTime() + 1), now });
    expect(digestItems(digest).map((i) => i.text)).toContain(learned.content);
    expect(digestItems(digest).some((i) => i.text.includes('talked about'))).toBe(false);
    // ... but found by search and shown to the next reply.
    const { results } = await core.search.search({ scopeId: scope.id, semanticQuery: 'Lisbon city', limit: 5, now });
    expect(results.some((r) => r.id === summary.id)).toBe(true);
    await say('Lisbon again: what do you remember?');
    expect(h.requests.filter((r) => r.purpose === 'reply').at(-1)!.system).toContain('The user talked about');
  });
});
