/**
 * The memory page's files over real HTTP from the composed service (src/service.ts as `npm start`
 * builds it), without a browser: `/app` and every asset it names answer without the admin token
 * (a browser opening the page cannot send one), with their types, the page's security headers
 * and cache headers; an asset the page does not name is a 404, however its name is spelled; the
 * admin routes still ask for the token.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import type { RunningService } from '../../src/service';
import { clearRegisteredSecrets } from '../../src/shared/redact';
import { startComposedService } from '../chaos/composed-service';
import { tempDir } from '../support/databases';
import { memoryLogger } from '../support/logger';

const ADMIN_TOKEN = 'adm-web-files-0123456789abcdef';
/** An asset is cached for a year (its address changes with its content). */
const YEAR_SECONDS = 31_536_000;

describe('the memory page: its files', () => {
  const dataDir = tempDir('nocturne-web-page-files-');
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

  it('GET /app and every asset it names answer without a token, typed, with security and cache headers', async () => {
    const page = await fetch(`${apiBase}/app`);
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(html).not.toMatch(/\{\{asset:/);
    // Nothing from elsewhere: every script and stylesheet is the service's own.
    expect(html).not.toMatch(/(src|href)="https?:/);

    const assets = [...html.matchAll(/(?:src|href)="(\/app\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    const sizes: Record<string, number> = {};
    for (const asset of assets) {
      const answer = await fetch(`${apiBase}${asset}`);
      const body = await answer.arrayBuffer();
      sizes[asset.replace(/^\/app\/assets\/|\?.*$/g, '')] = body.byteLength;
      expect({ asset, status: answer.status }).toEqual({ asset, status: 200 });
      expect(answer.headers.get('content-type')).toMatch(asset.includes('.css') ? /^text\/css/ : /^text\/javascript/);
      expect(answer.headers.get('cache-control')).toBe(`public, max-age=${YEAR_SECONDS}, immutable`);
      expect(body.byteLength).toBeGreaterThan(0);
    }
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    process.stderr.write(`web-page files: ${assets.length} assets, ${total} bytes (${JSON.stringify(sizes)})\n`);
    expect(Object.keys(sizes)).toEqual(expect.arrayContaining(['uPlot.iife.min.js', 'd3-force.min.js', 'app.js', 'app.css']));
  }, 60_000);

  it('a name the page does not serve is a 404 however it is spelled; the admin routes still want the token', async () => {
    for (const name of ['secret.txt', '..%2Fserver.ts', '..%2F..%2F..%2Fpackage.json', '%2Fetc%2Fpasswd', 'index.html'])
      expect({ name, status: (await fetch(`${apiBase}/app/assets/${name}`)).status }).toEqual({ name, status: 404 });
    for (const path of ['/scopes', '/openapi.json', '/metrics'])
      expect({ path, status: (await fetch(`${apiBase}${path}`)).status }).toEqual({ path, status: 401 });
  }, 60_000);
});
