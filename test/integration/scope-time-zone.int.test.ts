/**
 * One time zone per scope: with TZ=Europe/Madrid and a scope that names no zone of its own, at an
 * instant where the UTC date and Madrid's differ (23:30 UTC on 1 March is 00:30 on 2 March in
 * Madrid), the reply prompt's "Now", the consolidation prompt's episode times, the digest, `/why`
 * and the Markdown export all say Madrid's time. Real SQLite files, the real Anthropic SDK against
 * the loopback Messages API.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { explainMemory } from '../../src/channels/commands/why';
import type { Core } from '../../src/core';
import { exportScope } from '../../src/export/json-export';
import { renderMarkdownExport, joinMarkdownFiles } from '../../src/export/markdown-export';
import { createMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { agentServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

const KEY = 'telegram:private:34';
const ZONE = 'Europe/Madrid';
/** 23:30 UTC on 1 March: already 2 March, 00:30, in Madrid (CET, UTC+1). */
const INSTANT = new Date('2026-03-01T23:30:00Z');
const LOCAL = '2026-03-02 00:30';
const UTC_TEXT = '2026-03-01 23:30';

describe('one time zone per scope (TZ=Europe/Madrid)', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let core: Core;
  let agent: Agent;
  let scopeId: string;
  let memoryId: string;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel({})(seen) });
    h = await openAgentCore({ dataDir: tempDir(), provider: 'anthropic', url: double.url, env: { TZ: ZONE } });
    core = h.core;
    agent = createAgent({ ...agentServices(core), options: { clock: () => INSTANT } });
    const reply = await agent.handle({
      channel: 'telegram',
      scopeKey: KEY,
      scopeKind: 'private',
      authorName: 'Ana',
      authorId: '34',
      text: 'I moved to Madrid last week',
      timestamp: INSTANT,
      externalId: 'tz1',
    });
    expect(reply.degraded).toBeUndefined();
    scopeId = (await core.scopes.findByKey(KEY))!.id;
    // The digest's first period starts at the scope's creation: put it before the instant.
    await core.db.prisma.scope.update({ where: { id: scopeId }, data: { createdAt: new Date(INSTANT.getTime() - 86_400_000) } });
    expect((await core.db.prisma.scope.findUniqueOrThrow({ where: { id: scopeId } })).timezone).toBeNull();
    memoryId = (
      await core.db.prisma.$transaction((tx) =>
        createMemory(
          tx,
          { scopeId, category: 'fact', content: 'Ana lives in Madrid', confidence: 0.9, sourceEpisodeIds: [reply.episodeIds.user!] },
          { now: INSTANT },
        ),
      )
    ).id;
  });
  afterAll(async () => {
    await core?.close();
    await double?.stop();
  });

  it('says "Now" in the scope zone in the reply prompt', () => {
    const system = h.requests.filter((r) => r.purpose === 'reply').at(-1)!.system!;
    expect(system).toContain(`Now: ${LOCAL} (${ZONE}).`);
    expect(system).not.toContain(UTC_TEXT);
  });

  it('shows episode times in the scope zone in the consolidation prompt', async () => {
    const asked = h.requests.length;
    await core.sleep.planNextBatch(scopeId, { now: INSTANT, runId: 'tz-plan' });
    // The batch's first prompt (an answer that teaches nothing is asked again in halves after it).
    const prompt = h.requests.slice(asked).filter((r) => r.purpose === 'consolidation')[0]!.messages[0]!.content as string;
    expect(prompt).toContain(`(times in ${ZONE})`);
    expect(prompt).toMatch(new RegExp(`^E\\d+ ${LOCAL} user \\(Ana\\): I moved to Madrid`, 'm'));
    expect(prompt).not.toContain(UTC_TEXT);
  });

  it('writes the digest header in the scope zone', async () => {
    const digest = await core.digestBook.build(scopeId, { periodEnd: new Date(INSTANT.getTime() + 60_000), now: new Date(INSTANT.getTime() + 60_000) });
    expect(digest.content).toMatch(new RegExp(`2026-03-02 00:31, ${ZONE}\\)`));
  });

  it('answers /why and exports in the same zone', async () => {
    const why = await explainMemory(core.catalog, { id: scopeId, key: KEY, timeZone: ZONE }, 1, memoryId);
    expect(why).toContain(`• ${LOCAL}, Ana: “I moved to Madrid last week”`);
    const markdown = joinMarkdownFiles(renderMarkdownExport(await exportScope(core.db.prisma, scopeId), { defaultTimeZone: ZONE }));
    // The day's log is the Madrid day (2 March), its times Madrid's.
    expect(markdown).toContain(`Times in ${ZONE}.`);
    expect(markdown).toContain('2026-03-02');
    expect(markdown).toContain('00:30');
    expect(markdown).not.toContain('2026-03-01');
  });

  it('writes earlier episodes of the reply prompt and the soul\'s "Last updated" in the scope zone', async () => {
    await agent.endConversation(KEY, 'explicit');
    const later = new Date(INSTANT.getTime() + 10 * 60_000);
    agent = createAgent({ ...agentServices(core), options: { clock: () => later } });
    await agent.handle({
      channel: 'telegram',
      scopeKey: KEY,
      scopeKind: 'private',
      authorName: 'Ana',
      authorId: '34',
      text: 'where did I move to?',
      timestamp: later,
      externalId: 'tz2',
    });
    const prompt = h.requests.filter((r) => r.purpose === 'reply').at(-1)!;
    const shown = `${prompt.system}\n${prompt.messages.map((m) => m.content).join('\n')}`;
    expect(shown).toContain(`${LOCAL} Ana: I moved to Madrid last week`);
    expect(shown).not.toContain(UTC_TEXT);
    const soul = await regenerateSoul(core.db.prisma, scopeId, { now: INSTANT, defaultTimeZone: ZONE });
    expect(soul.soul).toContain(`_Last updated ${LOCAL} ${ZONE} from`);
  });
});
