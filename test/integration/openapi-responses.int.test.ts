/**
 * The admin API's OpenAPI document describes what comes back: the service started as `npm start`
 * starts it (src/main.ts, a child process on a SQLite file), every route in `/openapi.json` has a
 * 200 response schema (201 for the import that creates its scope), and a real answer of each main
 * route, and of a refused request, validates against the schema published for its status, with
 * ajv (fastify's own validator, the OpenAPI 3.0 dialect: `nullable`).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { tempDir } from '../support/databases';
import { exportEpisode, exportMemory, exportScopeRow } from '../support/export-rows';
import { cleanEnv, startTs } from '../support/run-process';
import { freePort } from '../chaos/chaos-support';

const TOKEN = 'admin-token-openapi-responses';
const SCOPE_ID = 'scope-openapi';
const SCOPE_KEY = 'import:openapi';
/** A loaded 2-core machine starts the service slowly; no answer here is timed. */
const START_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 120_000;

type Schema = Record<string, unknown>;
interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

/** An export of one scope: two messages, a memory learned from the first (with a source). */
function exportDocument(): Record<string, unknown> {
  return {
    format: 'nocturne.scope-export',
    version: 1,
    scope: exportScopeRow(SCOPE_ID, SCOPE_KEY, 1),
    profile: null,
    conversations: [],
    episodes: [exportEpisode(0, { content: 'I adopted a greyhound named Rocket' }), exportEpisode(1, { content: 'Rocket loves the beach' })],
    memories: [exportMemory(0, { content: 'Ana has a greyhound named Rocket' })],
    memoryLinks: [],
    entities: [],
    digests: [],
    reminders: [],
    sleepRuns: [],
    auditEvents: [],
  };
}

describe('the admin API publishes what each route answers', () => {
  let service: Awaited<ReturnType<typeof startTs>>;
  let api: string;
  let doc: { paths: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);

  beforeAll(async () => {
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    service = await startTs(
      'src/main.ts',
      cleanEnv({
        DATA_DIR: path.join(tempDir(), 'data'),
        ADMIN_TOKEN: TOKEN,
        API_PORT: String(port),
        SLEEP_ENABLED: 'false',
        EMBEDDER: 'ollama',
        OLLAMA_HOST: 'http://127.0.0.1:9',
      }),
      /Nocturne is ready/,
    );
    doc = (await (await fetch(`${api}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as typeof doc;
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    if (service && service.child.exitCode === null) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  /** The schema `/openapi.json` publishes for a route's answer with this status and media type. */
  function published(method: string, route: string, status: number, media = 'application/json'): Schema | undefined {
    const responses = doc.paths[route]?.[method.toLowerCase()]?.responses ?? {};
    const entry = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses[`${String(status)[0]}xx`];
    const schema = entry?.content?.[media]?.schema;
    // Shared parts are references into the document's components: validate with them beside.
    return schema && { ...schema, components: doc.components };
  }

  /** Calls the route and returns what failed to match its published schema (empty: it matched). */
  async function check(method: string, route: string, url: string, options: { body?: unknown; expect?: number; media?: string } = {}) {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${api}${url}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
    const text = await response.text();
    const media = options.media ?? 'application/json';
    const schema = published(method, route, response.status, media);
    const answer = media === 'application/json' ? (JSON.parse(text) as unknown) : text;
    const problems = !schema
      ? ['no published schema']
      : ajv.validate(schema, answer)
        ? []
        : (ajv.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
    return { method, url, status: response.status, problems, answer };
  }

  it('every route in /openapi.json has a 200 response schema', () => {
    const missing: string[] = [];
    let operations = 0;
    for (const [route, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        operations++;
        const responses = operation.responses ?? {};
        const ok = responses['200'] ?? responses['201'];
        if (!ok?.content || Object.values(ok.content).some((c) => !c.schema)) missing.push(`${method.toUpperCase()} ${route}`);
      }
    }
    process.stderr.write(`openapi-responses: ${operations} operations, ${missing.length} without a 200 schema: ${missing.join(', ')}\n`);
    expect(operations).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });

  it(
    'a real answer of each main route, and of a refused request, matches its published schema',
    async () => {
      const scope = '/scopes/{id}';
      const results = [];
      results.push(await check('POST', `${scope}/import`, `/scopes/${SCOPE_ID}/import`, { body: exportDocument() }));
      expect(results[0]!.status).toBe(201);
      const memoryId = 'mem-0';
      results.push(
        await check('GET', '/healthz', '/healthz'),
        await check('GET', '/readyz', '/readyz'),
        await check('GET', '/metrics', '/metrics', { media: 'text/plain' }),
        await check('GET', '/scopes', '/scopes'),
        await check('GET', `${scope}/memories`, `/scopes/${SCOPE_ID}/memories`),
        await check('GET', `${scope}/memories/{mid}`, `/scopes/${SCOPE_ID}/memories/${memoryId}`),
        await check('POST', `${scope}/search`, `/scopes/${SCOPE_ID}/search`, { body: { query: 'greyhound', strategy: 'keyword' } }),
        await check('GET', `${scope}/episodes`, `/scopes/${SCOPE_ID}/episodes`),
        await check('GET', `${scope}/audit`, `/scopes/${SCOPE_ID}/audit`),
        await check('GET', `${scope}/settings`, `/scopes/${SCOPE_ID}/settings`),
        await check('PATCH', `${scope}/settings`, `/scopes/${SCOPE_ID}/settings`, { body: { timezone: 'Europe/Madrid', sleepWindow: '01:00-05:00' } }),
        await check('POST', `${scope}/sleep`, `/scopes/${SCOPE_ID}/sleep`, { body: { dryRun: true } }),
        await check('GET', `${scope}/export`, `/scopes/${SCOPE_ID}/export`),
        await check('GET', `${scope}/export`, `/scopes/${SCOPE_ID}/export?format=markdown`, { media: 'text/markdown' }),
        await check('GET', '/links', '/links'),
        // Refused: a bad query (400 with its problems), a memory of no scope (404), no token (401).
        await check('GET', `${scope}/memories`, `/scopes/${SCOPE_ID}/memories?limit=Infinity`),
        await check('GET', `${scope}/memories/{mid}`, `/scopes/${SCOPE_ID}/memories/no-such-memory`),
        await check('DELETE', `${scope}/memories/{mid}`, `/scopes/${SCOPE_ID}/memories/${memoryId}`),
        await check('DELETE', `${scope}/memories`, `/scopes/${SCOPE_ID}/memories`),
      );
      const statuses = results.map((r) => `${r.method} ${r.url} ${r.status}`);
      process.stderr.write(`openapi-responses: checked ${results.length} answers:\n  ${statuses.join('\n  ')}\n`);
      expect(results.map((r) => r.status)).toEqual([201, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 400, 404, 200, 200]);
      const bad = results.filter((r) => r.problems.length > 0).map((r) => ({ call: `${r.method} ${r.url} ${r.status}`, problems: r.problems }));
      expect(bad).toEqual([]);
      // The validation detail is unchanged: "field: problem", with the problems listed.
      expect(results[16]!.answer).toEqual(expect.objectContaining({ error: 'Invalid request', problems: [expect.objectContaining({ field: 'limit' })] }));
    },
    TEST_TIMEOUT_MS,
  );

  it('the /docs page shows what each route answers', async () => {
    const html = await (await fetch(`${api}/docs`)).text();
    const answers = html.match(/<p>Answer 2\d\d \(/g) ?? [];
    const section = html.slice(html.indexOf('<code>/scopes/{id}/memories</code>'));
    process.stderr.write(`openapi-responses: /docs shows ${answers.length} answers\n`);
    expect(answers.length).toBeGreaterThan(20);
    expect(section.slice(0, section.indexOf('</section>'))).toContain('Answer 200 (application/json)');
  });

  it('a request without the token is answered 401 in the published error shape', async () => {
    const response = await fetch(`${api}/scopes`);
    const schema = published('GET', '/scopes', response.status);
    expect(response.status).toBe(401);
    expect(schema).toBeDefined();
    expect(ajv.validate(schema!, await response.json())).toBe(true);
  });

  it(
    'the service logged no answer that missed its schema and stops cleanly on SIGTERM',
    async () => {
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(service.output()).not.toMatch(/does not match its published schema/);
    },
    TEST_TIMEOUT_MS,
  );
});
