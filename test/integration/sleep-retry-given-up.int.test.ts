/**
 * Messages consolidation gave up on (the model gave no usable answer SLEEP_MAX_ATTEMPTS times)
 * can be tried again once the model answers: `cli sleep` says how many there are and how to
 * retry them, `cli sleep --retry` makes them eligible (audited) and learns from them. The CLI as
 * a person runs it (child processes on a real SQLite file), the model a loopback Anthropic double
 * that first answers nonsense, then properly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli } from '../support/run-process';

describe('retrying messages consolidation gave up on', () => {
  let model: AnthropicDouble;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let answering = false;

  beforeAll(async () => {
    model = await startAnthropicDouble({
      responder: (seen) => {
        if (!(seen.system ?? '').includes('memory consolidation system')) return { kind: 'text', text: 'ok' };
        if (!answering) return { kind: 'text', text: 'I am not sure what you want from me.' };
        const episode = /^(E\d+) .*cello/m.exec(seen.messages.at(-1)?.text ?? '')?.[1];
        if (!episode) return { kind: 'text', text: JSON.stringify({ nothing: 'small talk' }) };
        return {
          kind: 'text',
          text: JSON.stringify({ new: [{ category: 'goal', content: 'Ana is learning the cello', confidence: 0.9, source: 'stated', episodes: [episode] }] }),
        };
      },
    });
    dir = tempDir();
    env = cleanEnv({
      DATA_DIR: path.join(dir, 'data'),
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-test-cli-000000000',
      ANTHROPIC_BASE_URL: model.url,
      SLEEP_ENABLED: 'false',
      SLEEP_MAX_ATTEMPTS: '1',
    });
    const file = path.join(dir, 'one.jsonl');
    fs.writeFileSync(
      file,
      `${JSON.stringify({ content: 'I started learning the cello', author: 'Ana', timestamp: '2026-03-02T18:40:00Z', externalId: 'm1' })}\n`,
    );
    expect((await runCli(['import', '--scope', 'ana', file], env)).code).toBe(0);
  });
  afterAll(async () => model?.stop());

  it('sleep --retry learns from them once the model answers, and the audit trail says who asked', async () => {
    const failing = await runCli(['sleep', '--scope', 'ana'], env);
    expect(failing.stdout).not.toContain('New');
    answering = true;
    const stuck = await runCli(['sleep', '--scope', 'ana'], env);
    process.stderr.write(`sleep-retry: after giving up: ${JSON.stringify(stuck.stdout)}\n`);
    expect(stuck.code).toBe(0);
    expect(stuck.stdout).toContain('1 message could not be learned from after 1 try; `sleep --scope ana --retry` tries them again');

    const retried = await runCli(['sleep', '--scope', 'ana', '--retry'], env);
    process.stderr.write(`sleep-retry: retry: ${JSON.stringify(retried.stdout)}\n`);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toMatch(/^1 message given up on before is tried again\nsucceeded: 1 episode consolidated\n/);
    expect(retried.stdout).toContain('1. Ana is learning the cello');
    expect(retried.stdout).not.toContain('could not be learned from');

    const audit = JSON.parse((await runCli(['audit', '--scope', 'ana', '--json'], env)).stdout) as { events: Array<{ action: string; reason: string | null }> };
    expect(audit.events.filter((e) => e.action === 'consolidation_retry').map((e) => e.reason)).toEqual(['asked from the command line (sleep --retry)']);
  }, 240_000);
});
