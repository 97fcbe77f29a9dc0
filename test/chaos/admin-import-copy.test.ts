/**
 * The admin API's `POST /scopes/:id/import?mode=copy` on the composed service (src/service.ts as
 * `npm start` builds it): a copy has new ids, so the path names the new scope by its key and the
 * import creates it (the CLI's `import-scope FILE --as NEW_KEY`); no other call is needed first.
 * The person's memory is made by a signed webhook message answered by the loopback model.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import { signRequest } from '../../src/channels/webhook/signature';
import type { RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { startComposedService } from './composed-service';

const WEBHOOK_SECRET = 'whk-copy-0123456789abcdef';
const ADMIN_TOKEN = 'adm-copy-0123456789abcdef';

describe('admin API import as a copy (chaos)', () => {
  const logs = memoryLogger();
  const dataDir = tempDir('nocturne-chaos-import-copy-');
  let double: AnthropicDouble;
  let service: RunningService;
  let apiBase: string;
  let webhookBase: string;

  const api = async (method: string, path: string, body?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${apiBase}${path}`, { method, headers, body });
    return { status: response.status, text: await response.text() };
  };

  beforeAll(async () => {
    double = await startAnthropicDouble({ responder: () => ({ kind: 'text', text: 'Noted.' }) });
    ({ service, apiBase, webhookBase } = await startComposedService({
      dataDir,
      logger: logs.logger,
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-import-copy', ANTHROPIC_BASE_URL: double.url, ADMIN_TOKEN, WEBHOOK_SECRET },
    }));
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await double?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('POST /scopes/<new key>/import?mode=copy creates the copy under that key', async () => {
    const raw = JSON.stringify({ user: 'ana', text: 'I keep bees on the roof', messageId: 'copy-1' });
    const headers = signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: '/webhook/crm', body: raw });
    expect((await fetch(`${webhookBase}/webhook/crm`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw })).status).toBe(
      200,
    );

    const exported = await api('GET', `/scopes/${encodeURIComponent('webhook:crm:ana')}/export`);
    expect(exported.status).toBe(200);
    const copied = await api('POST', '/scopes/ana-copy/import?mode=copy', exported.text);
    process.stderr.write(`admin-import-copy: ${copied.status} ${copied.text.slice(0, 300)}\n`);
    expect(copied.status).toBe(201);
    expect(JSON.parse(copied.text)).toMatchObject({ scopeKey: 'ana-copy', mode: 'copy' });

    const episodes = JSON.parse((await api('GET', '/scopes/ana-copy/episodes')).text) as { episodes: Array<{ content: string }> };
    expect(episodes.episodes.map((e) => e.content)).toEqual(['I keep bees on the roof', 'Noted.']);
    // The original is untouched, and a second copy under the same key is refused (the scope has data).
    expect((await api('GET', `/scopes/${encodeURIComponent('webhook:crm:ana')}/episodes`)).status).toBe(200);
    const again = await api('POST', '/scopes/ana-copy/import?mode=copy', exported.text);
    expect(again.status).toBe(409);
  }, 120_000);
});
