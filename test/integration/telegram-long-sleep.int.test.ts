/**
 * A long `/sleep` on Telegram (real grammY against the loopback Bot API, real SQLite, the
 * Anthropic SDK against a loopback double whose consolidation call takes ~10 s): the chat keeps
 * showing "typing…" (the action is sent again before Telegram's ~5 s display lapses) and gets a
 * short status message, then the answer; never one typing indicator and a long silence.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { ANA, converse, startHarness, textsIn, type Harness } from './telegram-harness';

const SLOW_MS = 10_000;

describe('Telegram: a long /sleep', () => {
  let h: Harness;
  let model: AnthropicDouble;
  let slowed = false;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: 'ok' };
        if (!slowed) {
          slowed = true;
          return { kind: 'hang', ms: SLOW_MS };
        }
        return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
      },
    });
    h = await startHarness({
      env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-test-long-sleep', ANTHROPIC_BASE_URL: model.url, LLM_TIMEOUT_MS: '60000' },
    });
    await converse(h.fake, ANA, 'I am reading a book about lighthouses');
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await model?.stop();
  });

  it('keeps typing alive and says it is working, then answers', async () => {
    const before = textsIn(h.fake, ANA.id).length;
    const typingBefore = h.fake.calls('sendChatAction').length;
    h.fake.message(ANA, '/sleep');
    await h.fake.waitFor(() => textsIn(h.fake, ANA.id).length >= before + 2, 60_000, 'the status and the answer');
    const texts = textsIn(h.fake, ANA.id).slice(before);
    const typing = h.fake.calls('sendChatAction').length - typingBefore;
    process.stderr.write(`telegram-long-sleep: typing actions ${typing}, texts ${JSON.stringify(texts)}\n`);
    expect(texts[0]).toMatch(/^Sorting through our recent conversations/);
    expect(texts[1]).toMatch(/^(Done|Nothing to do|That did not work)/);
    expect(typing).toBeGreaterThanOrEqual(3);
  }, 90_000);
});
