/**
 * Two identities of one person writing at the same moment: the owner's Telegram chat and the
 * owner's terminal (OWNER_TELEGRAM_USER_ID, OWNER_TERMINAL_USER) speak into one scope, and the
 * agent takes a message from each at once, round after round, on a real SQLite store with the
 * real Anthropic SDK against the loopback double. The agent's work on a scope runs one turn at a
 * time whichever identity the turn came from, so the shared scope ends with one open
 * conversation whose turns are numbered 0, 1, 2, ... without a gap or a repeat, and whose working
 * memory holds every turn (no reply's save overwrote another's).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent, type Agent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { agentModel, openAgentCore, type AgentCore } from './agent-harness';

const OWNER_TELEGRAM = '6101';
const TELEGRAM = `telegram:private:${OWNER_TELEGRAM}`;
const TERMINAL = 'terminal:ana';
/** Rounds of two simultaneous messages (the first round also opens the conversation twice at once). */
const ROUNDS = 6;
const TEST_TIMEOUT_MS = 180_000;

describe('linked identities writing at once into one scope', () => {
  let double: AnthropicDouble;
  let h: AgentCore;
  let agent: Agent;

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: (seen) => agentModel({})(seen) });
    h = await openAgentCore({
      dataDir: tempDir('nocturne-linked-turns-'),
      provider: 'anthropic',
      url: double.url,
      env: { OWNER_TELEGRAM_USER_ID: OWNER_TELEGRAM, OWNER_TERMINAL_USER: 'ana' },
    });
    agent = createAgent({ ...agentServices(h.core) });
  });
  afterAll(async () => {
    await h?.core.close();
    await double?.stop();
  });

  it(
    'serializes the turns of both identities: one conversation, turns numbered without repeats, all in the working memory',
    async () => {
      const base = Date.parse('2026-03-02T09:00:00Z');
      for (let round = 0; round < ROUNDS; round++) {
        const at = new Date(base + round * 60_000);
        const replies = await Promise.all([
          agent.handle({
            channel: 'telegram',
            scopeKey: TELEGRAM,
            scopeKind: 'private',
            authorName: 'Ana',
            authorId: OWNER_TELEGRAM,
            text: `telegram says ${round}`,
            timestamp: at,
            externalId: `tg-${round}`,
          }),
          agent.handle({
            channel: 'terminal',
            scopeKey: TERMINAL,
            scopeKind: 'user',
            authorName: 'Ana',
            text: `terminal says ${round}`,
            timestamp: at,
            externalId: `term-${round}`,
          }),
        ]);
        expect(replies.map((r) => r.degraded ?? 'ok')).toEqual(['ok', 'ok']);
      }

      const prisma = h.core.db.prisma;
      const scope = (await h.core.scopes.findByKey(TELEGRAM))!;
      expect(await h.core.scopes.findByKey(TERMINAL)).toBeNull();
      const conversations = await prisma.conversation.findMany({ where: { scopeId: scope.id }, select: { id: true, status: true } });
      const episodes = await prisma.episode.findMany({ where: { scopeId: scope.id }, select: { conversationId: true, turn: true } });
      const turns = episodes.map((e) => e.turn).sort((a, b) => (a ?? -1) - (b ?? -1));
      const memory = await h.core.conversations.find(scope.id);
      const figures = {
        conversations: conversations.length,
        episodes: episodes.length,
        distinctTurns: new Set(turns).size,
        inWorkingMemory: memory?.state.recentTurnIds.length ?? 0,
      };
      // eslint-disable-next-line no-console
      console.log(`agent-linked-turns: ${JSON.stringify(figures)}`);
      expect(figures).toEqual({ conversations: 1, episodes: 4 * ROUNDS, distinctTurns: 4 * ROUNDS, inWorkingMemory: 4 * ROUNDS });
      expect(turns).toEqual(Array.from({ length: 4 * ROUNDS }, (_, i) => i));
    },
    TEST_TIMEOUT_MS,
  );
});
