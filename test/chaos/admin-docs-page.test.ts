/**
 * The admin API's reference page opens in a browser (which sends no bearer header), while every
 * route with data stays behind the token. The composed service (src/service.ts as `npm start`
 * builds it) over real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import type { RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';
import { startComposedService } from './composed-service';

const ADMIN_TOKEN = 'adm-docs-0123456789abcdef';

describe('admin API reference page (chaos)', () => {
  const dataDir = tempDir('nocturne-chaos-docs-page-');
  let service: RunningService;
  let apiBase: string;

  beforeAll(async () => {
    ({ service, apiBase } = await startComposedService({ dataDir, logger: memoryLogger().logger, env: { ADMIN_TOKEN } }));
  }, 90_000);
  afterAll(async () => {
    await service?.stop();
    clearRegisteredSecrets();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('GET /docs answers the page without a token; the data routes still ask for it', async () => {
    const page = await fetch(`${apiBase}/docs`, { headers: { accept: 'text/html' } });
    const html = await page.text();
    process.stderr.write(`admin-docs-page: /docs ${page.status} ${page.headers.get('content-type')}, ${html.length} chars\n`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('/scopes/{id}/memories');
    expect(html).not.toContain(ADMIN_TOKEN);
    for (const path of ['/scopes', '/openapi.json', '/metrics'])
      expect({ path, status: (await fetch(`${apiBase}${path}`)).status }).toEqual({ path, status: 401 });
  }, 60_000);
});
