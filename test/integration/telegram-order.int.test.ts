/**
 * Arrival order (issue 17): Telegram dates a person's message in whole seconds, the agent's
 * replies carry milliseconds. A fast exchange within one second, through the real bot (grammY +
 * runner against the loopback Bot API) and the real agent (Anthropic SDK against its loopback
 * double), must be listed by `cli episodes` (a child process) as it happened: question, answer,
 * question, answer.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createAgent } from '../../src/agent/agent';
import { agentServices } from '../../src/service';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { cleanEnv, runCli } from '../support/run-process';
import { ANA, startHarness, type Harness } from './telegram-harness';

describe('Telegram: turns listed in arrival order', () => {
  let h: Harness;
  let model: AnthropicDouble;

  beforeAll(async () => {
    model = await startAnthropicDouble({ responder: (seen) => ({ kind: 'text', text: `answer to ${seen.messages.at(-1)?.text.slice(-2)}` }) });
    h = await startHarness({ env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-order-00000000', ANTHROPIC_BASE_URL: model.url } });
    const agent = createAgent(agentServices(h.core));
    h.handler.reply = async (message) => (await agent.handle(message)).text;
  });
  afterAll(async () => {
    await h?.close();
    await model?.stop();
  });

  it('a question sent in the same second as the answer before it is listed after that answer', async () => {
    const sent = () => h.fake.sent(ANA.id).length;
    // A first exchange warms the scope up; Q1 then goes out at the start of a second.
    h.fake.message(ANA, 'Q0');
    await h.fake.waitFor(() => sent() === 1, 10_000, 'the answer to Q0');
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
    const q1 = h.fake.message(ANA, 'Q1');
    await h.fake.waitFor(() => sent() === 2, 10_000, 'the answer to Q1');
    // Sent right after the answer arrived, within the same whole second as Q1 (a fast typist; the
    // machine here may be too slow to make that happen by itself, so the date is Telegram's for Q1).
    h.fake.inject({ message: { ...q1.message, message_id: q1.message.message_id + 1, text: 'Q2' } });
    await h.fake.waitFor(() => sent() === 3, 10_000, 'the answer to Q2');
    expect(h.fake.sent(ANA.id).map((m) => m.text)).toEqual(['answer to Q0', 'answer to Q1', 'answer to Q2']);

    const result = await runCli(['episodes', '--scope', `telegram:private:${ANA.id}`, '--json'], cleanEnv({ DATA_DIR: h.core.config.dataDir }));
    expect(result.code).toBe(0);
    const { episodes } = JSON.parse(result.stdout) as { episodes: Array<{ content: string; role: string; timestamp: string }> };
    expect(episodes.map((e) => e.content)).toEqual(['Q0', 'answer to Q0', 'Q1', 'answer to Q1', 'Q2', 'answer to Q2']);
    expect(episodes.map((e) => e.role)).toEqual(['user', 'agent', 'user', 'agent', 'user', 'agent']);
  });
});
