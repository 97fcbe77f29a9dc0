/**
 * What the MCP tests share: a SQLite store seeded with two people's memories (written through the
 * domain's guarded writer, with the messages they came from), MCP clients of the official SDK on
 * both transports, and reading a tool's answer.
 */
import { expect } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../../src/config/load-config';
import { createEpisodeService } from '../../src/memory/episodes/episode-service';
import { createMemory, supersedeMemory } from '../../src/memory/memories/memory-writer';
import { regenerateSoul } from '../../src/memory/profiles/soul';
import { openDatabase } from '../../src/storage/database';
import { createEpisodeRepository } from '../../src/storage/episode-repository';
import { createScopeRepository } from '../../src/storage/scope-repository';
import { memoryLogger } from '../support/logger';
import { ROOT } from '../support/run-process';

/** The ids of what was planted in one person's scope. */
export interface Seeded {
  readonly scopeId: string;
  /** Ana: a memory about her bees (sourced from a message holding a credential). */
  readonly bees: string;
  /** Ana: the earlier and the current version of where she lives. */
  readonly porto: string;
  readonly lisbon: string;
  /** A memory that no forget in the tests touches. */
  readonly keep: string;
}

/**
 * Plants Ana's and Bo's memories in the store of `env` and closes it. Ana's bee memory comes from
 * a message that holds `secret` as written (the output filter must hide it); Bo's memories hold
 * words that appear nowhere in Ana's scope (`quartzite`).
 */
export async function seedStore(env: NodeJS.ProcessEnv, secret: string): Promise<{ ana: Seeded; bo: Seeded }> {
  const config = loadConfig({ env, envFile: false });
  const { logger } = memoryLogger();
  const db = await openDatabase({ database: config.database, logger });
  try {
    const episodes = createEpisodeService({
      scopes: createScopeRepository(db.prisma),
      episodes: createEpisodeRepository(db.prisma),
      logger,
      maxEpisodeBytes: config.ingest.maxEpisodeBytes,
    });
    const now = new Date(Date.now() - 3_600_000);
    const plant = async (key: string, lines: { bees: string; porto: string; lisbon: string; keep: string; secretLine: string }) => {
      const say = async (content: string, n: number) =>
        (
          await episodes.ingest(
            { key, channel: 'desk' },
            { role: 'user', content, externalId: `${key}-${n}`, timestamp: new Date(now.getTime() + n * 1000).toISOString() },
          )
        ).episode!.id;
      const e1 = await say(lines.secretLine, 1);
      const e2 = await say(lines.porto, 2);
      const e3 = await say(lines.lisbon, 3);
      const e4 = await say(lines.keep, 4);
      const scopeId = (await db.prisma.scope.findUniqueOrThrow({ where: { key } })).id;
      return db.prisma.$transaction(async (tx) => {
        const at = { now };
        const bees = (await createMemory(tx, { scopeId, category: 'fact', content: lines.bees, confidence: 0.9, sourceEpisodeIds: [e1] }, at)).id;
        const porto = (await createMemory(tx, { scopeId, category: 'fact', content: lines.porto, confidence: 0.8, sourceEpisodeIds: [e2] }, at)).id;
        const { current } = await supersedeMemory(
          tx,
          scopeId,
          porto,
          { content: lines.lisbon, sourceEpisodeIds: [e3] },
          { now: new Date(now.getTime() + 60_000) },
        );
        const keep = (await createMemory(tx, { scopeId, category: 'preference', content: lines.keep, confidence: 0.85, sourceEpisodeIds: [e4] }, at)).id;
        return { scopeId, bees, porto, lisbon: current.id, keep };
      });
    };
    const ana = await plant('desk:ana', {
      secretLine: `I keep bees on my balcony; the hive camera key is ${secret}`,
      bees: 'Ana keeps bees on her balcony',
      porto: 'Ana lives in Porto',
      lisbon: 'Ana lives in Lisbon since May',
      keep: 'Ana prefers green tea in the morning',
    });
    const bo = await plant('desk:bo', {
      secretLine: 'I collect quartzite pebbles from the river',
      bees: 'Bo collects quartzite pebbles from the river',
      porto: 'Bo lives in Braga',
      lisbon: 'Bo lives in Coimbra now',
      keep: 'Bo prefers black coffee',
    });
    for (const scopeId of [ana.scopeId, bo.scopeId]) await regenerateSoul(db.prisma, scopeId, { now: new Date() });
    return { ana, bo };
  } finally {
    await db.close();
  }
}

/** The answer of one tool call: its text, its JSON when it is JSON, and whether it is an error. */
export interface ToolAnswer {
  readonly isError: boolean;
  readonly text: string;
  readonly json: Record<string, unknown> | undefined;
}

export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as Array<{ type: string; text?: string }>;
  const text = content.map((c) => c.text ?? '').join('\n');
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { isError: result.isError === true, text, json };
}

/** A connected client of the service's `/mcp` (with `token` as bearer and `scope` as ?scope= when given). */
export async function httpClient(base: string, options: { token?: string; scope?: string; header?: Record<string, string> } = {}): Promise<Client> {
  const url = new URL('/mcp', base);
  if (options.scope) url.searchParams.set('scope', options.scope);
  const headers: Record<string, string> = { ...(options.token && { authorization: `Bearer ${options.token}` }), ...options.header };
  const client = new Client({ name: 'nocturne-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

/** A client of `npm run -s mcp -- --scope KEY` started as a child process, as a desktop agent starts it. */
export async function stdioClient(env: NodeJS.ProcessEnv, scope: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: 'npm',
    args: ['run', '-s', 'mcp', '--', '--scope', scope],
    env: env as Record<string, string>,
    cwd: ROOT,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const client = new Client({ name: 'nocturne-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => err };
}

/** The tools and resources every transport lists. */
export async function expectListing(client: Client): Promise<void> {
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  expect(tools).toEqual(['memory_forget', 'memory_list', 'memory_save', 'memory_search', 'profile_get']);
  const resources = (await client.listResources()).resources.map((r) => r.uri).sort();
  expect(resources).toEqual(['nocturne://digest/latest', 'nocturne://soul']);
  for (const tool of (await client.listTools()).tools) expect(JSON.stringify(tool.inputSchema)).not.toMatch(/"scope"/);
}
