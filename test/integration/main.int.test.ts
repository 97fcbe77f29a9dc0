/**
 * `npm start` (src/main.ts) as a process: it comes up on the embedded defaults, creates its
 * database under DATA_DIR, and stops cleanly on SIGTERM and SIGINT.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { startAnthropicDouble } from '../doubles/anthropic-server';
import { lastUserText } from '../doubles/llm-script';
import { tempDir } from '../support/databases';
import { cleanEnv, runTs, startTs } from '../support/run-process';
import { freePort } from '../support/free-port';

describe('npm start', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('comes up on the embedded defaults and stops cleanly on %s', async (signal) => {
    const dataDir = path.join(tempDir(), 'data');
    const service = await startTs('src/main.ts', cleanEnv({ DATA_DIR: dataDir, ANTHROPIC_API_KEY: 'sk-ant-test-key-never-logged-1234' }), /Nocturne is ready/);
    expect(fs.existsSync(path.join(dataDir, 'nocturne.db'))).toBe(true);
    service.child.kill(signal);
    expect(await service.exited).toBe(0);
    const output = service.output();
    expect(output).toMatch(/stopped cleanly/);
    expect(output).not.toMatch(/never-logged/);
    const lines = output.split('\n').filter((line) => line.startsWith('{'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('serves the admin API when ADMIN_TOKEN is set, on loopback, and closes it on stop', async () => {
    const port = await freePort();
    const token = 'admin-token-for-main-test-42';
    const service = await startTs(
      'src/main.ts',
      cleanEnv({ DATA_DIR: path.join(tempDir(), 'data'), ADMIN_TOKEN: token, API_PORT: String(port) }),
      /Nocturne is ready/,
    );
    try {
      expect(await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()).toEqual({ status: 'ok' });
      expect((await fetch(`http://127.0.0.1:${port}/scopes`)).status).toBe(401);
      expect(await (await fetch(`http://127.0.0.1:${port}/scopes`, { headers: { authorization: `Bearer ${token}` } })).json()).toEqual({ scopes: [] });
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toBe(0);
    expect(service.output()).not.toContain(token);
  });

  it('talks on the terminal and remembers the conversation across restarts', async () => {
    const double = await startAnthropicDouble({
      responder: (seen) => {
        const said = lastUserText(seen.messages);
        const rest = [seen.system ?? '', ...seen.messages.map((m) => m.text)].join('\n').replace(said, '');
        return { kind: 'text', text: `heard "${said}"${rest.includes('Kyoto') ? ' and I remember Kyoto' : ''}` };
      },
    });
    try {
      const env = cleanEnv({
        DATA_DIR: path.join(tempDir(), 'data'),
        ANTHROPIC_API_KEY: 'sk-ant-terminal-test-0000',
        ANTHROPIC_BASE_URL: double.url,
        TERMINAL: 'on',
        TERMINAL_USER: 'ana',
      });
      const first = await runTs('src/main.ts', [], env, undefined, 'I am flying to Kyoto in May\n');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('heard "I am flying to Kyoto in May"');
      expect(first.stdout).not.toContain('I remember Kyoto');
      const second = await runTs('src/main.ts', [], env, undefined, 'where am I going?\n');
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('heard "where am I going?" and I remember Kyoto');
      expect(second.stderr).toMatch(/stopped cleanly/);
      expect(first.stderr + second.stderr).not.toContain('sk-ant-terminal-test-0000');
    } finally {
      await double.stop();
    }
  });

  it('exits with status 2 and lists every problem when the configuration is invalid', async () => {
    const result = await runTs('src/main.ts', [], cleanEnv({ DB_PROVIDER: 'postgres', EMBEDDER: 'word2vec' }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Invalid configuration/);
    expect(result.stderr).toMatch(/EMBEDDER: .*local.*ollama/);
    expect(result.stderr).toMatch(/DATABASE_URL: must be a postgresql:/);
  });
});
