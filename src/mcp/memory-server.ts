/**
 * Nocturne's memory as an MCP server (the official SDK's McpServer), for a person's own agents:
 * a desktop assistant searches, saves to, lists and forgets from the memory of ONE scope, and
 * reads the soul and the latest digest.
 *
 * The scope is the door's, never the client's: every server is built for one scope (the stdio
 * command's `--scope`, or the scope an HTTP request's token opens) and no tool takes a scope
 * argument; unknown arguments are refused, so a client cannot even name another scope. Every
 * tool calls the domain's services (search, catalog, episodes, forget, profiles, digest book),
 * and every text it answers passes the output filter once more on its way out.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { DigestBook } from '../memory/digests/digest-book';
import type { EpisodeService } from '../memory/episodes/episode-service';
import type { ForgetService } from '../memory/forget/forget-service';
import type { MemoryCatalog } from '../memory/memories/memory-catalog';
import type { ProfileReader } from '../memory/profiles/profile-reader';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import type { SearchResult } from '../memory/retrieval/memory-query';
import type { Scope } from '../memory/records';
import { showStored } from '../memory/output-filter';
import type { Logger } from '../shared/logger';
import { registerForgetTool } from './forget-tool';
import type { ForgetPreviewBook } from './forget-previews';
import { saveStatement } from './save-statement';
import { guarded, jsonResult } from './tool-results';

/** The server's name and version as MCP clients show them. */
export const MCP_SERVER_INFO = { name: 'nocturne-memory', version: '1.0.0' } as const;
/** Source messages shown with each memory a search finds (why it is believed). */
const SOURCES_PER_MEMORY = 3;
const DEFAULT_SEARCH_LIMIT = 8;
const MAX_SEARCH_LIMIT = 20;
const DEFAULT_LIST_LIMIT = 20;
const MAX_LIST_LIMIT = 100;
const MAX_QUERY_CHARS = 500;

/** The domain services the MCP door uses, by name. */
export interface McpDoorServices {
  readonly search: HybridSearch;
  readonly catalog: Pick<MemoryCatalog, 'list' | 'explain'>;
  readonly episodes: Pick<EpisodeService, 'recordTurn'>;
  readonly forget: Pick<ForgetService, 'prepareForget' | 'forgetMatching'>;
  readonly profiles: Pick<ProfileReader, 'soul'>;
  readonly digestBook: Pick<DigestBook, 'latest'>;
  /** The previews `memory_forget` confirms (one book per listener or process). */
  readonly forgetPreviews: ForgetPreviewBook;
  readonly logger: Logger;
}

/** One search result as `memory_search` answers it: why it matched, and a memory's source messages. */
async function searchAnswer(catalog: McpDoorServices['catalog'], scopeId: string, r: SearchResult) {
  const common = { kind: r.kind, id: r.id, content: r.content, timestamp: r.timestamp.toISOString(), score: Number(r.score.toFixed(4)), why: r.parts };
  if (r.kind !== 'memory') return { ...common, role: r.role, author: r.author ?? null };
  const explanation = await catalog.explain(scopeId, r.id, SOURCES_PER_MEMORY);
  const sources = explanation?.sources.map((s) => ({ timestamp: s.timestamp.toISOString(), role: s.role, author: s.author, content: s.content })) ?? [];
  return { ...common, category: r.category, confidence: r.confidence, faded: r.faded ?? false, sourceCount: explanation?.sourceCount ?? 0, sources };
}

/** A new MCP server bound to `scope`: its tools and resources read and write that scope only. */
export function createMemoryMcpServer(services: McpDoorServices, scope: Scope): McpServer {
  const log = services.logger.child({ component: 'mcp' });
  const server = new McpServer(MCP_SERVER_INFO, {
    instructions:
      'Long-term memory of one person. Search before answering questions about them; save what they state ' +
      'about themselves; forget only after showing them the preview.',
  });

  server.registerTool(
    'memory_search',
    {
      title: 'Search memory',
      description:
        'Hybrid (semantic + keyword) search of what the person said and what was learned from it. Each result ' +
        'says why it matched (score parts) and, for memories, the messages they came from.',
      inputSchema: z.strictObject({
        query: z.string().trim().min(1).max(MAX_QUERY_CHARS).describe('what to look for, in natural language'),
        limit: z.number().int().min(1).max(MAX_SEARCH_LIMIT).optional().describe(`at most this many results (default ${DEFAULT_SEARCH_LIMIT})`),
        kinds: z
          .array(z.enum(['memory', 'episode']))
          .min(1)
          .max(2)
          .optional()
          .describe('memories (learned), episodes (messages), or both (default)'),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(log, 'memory_search', async () => {
        const { results, notes } = await services.search.search({
          scopeId: scope.id,
          semanticQuery: args.query,
          strategy: 'hybrid',
          limit: args.limit ?? DEFAULT_SEARCH_LIMIT,
          kinds: args.kinds,
        });
        const answered = await Promise.all(results.map((r) => searchAnswer(services.catalog, scope.id, r)));
        return jsonResult({ results: answered, notes });
      }),
  );

  server.registerTool(
    'memory_save',
    {
      title: 'Save a statement',
      description:
        'Stores a statement BY THE PERSON (their own words, e.g. "I moved to Lisbon in May") as a message of ' +
        'theirs. It is learned into memory at the next sleep, like any message; nothing is a memory before that. ' +
        'Refused: instructions to the memory system, credentials, texts over the size limit.',
      inputSchema: z.strictObject({
        statement: z.string().min(1).describe("the person's statement, in their words"),
        id: z.string().trim().min(1).max(200).optional().describe('an id of your own: saving again with the same id stores nothing new'),
      }),
    },
    (args) => guarded(log, 'memory_save', async () => jsonResult(await saveStatement(services.episodes, scope, args))),
  );

  server.registerTool(
    'memory_list',
    {
      title: 'List memories',
      description: 'What is remembered about the person, most confident first; `state: all` adds faded and superseded versions.',
      inputSchema: z.strictObject({
        category: z.string().trim().min(1).max(64).optional().describe('only this category (e.g. preference, fact, goal)'),
        state: z.enum(['current', 'all']).optional().describe('current (default) or all'),
        limit: z.number().int().min(1).max(MAX_LIST_LIMIT).optional(),
        offset: z.number().int().min(0).optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(log, 'memory_list', async () => {
        const limit = args.limit ?? DEFAULT_LIST_LIMIT;
        const offset = args.offset ?? 0;
        const query = { state: args.state ?? 'current', category: args.category, limit, offset } as const;
        const { total, memories } = await services.catalog.list(scope.id, query);
        const lines = memories.map((m) => ({
          id: m.id,
          category: m.category,
          content: m.content,
          confidence: m.confidence,
          state: m.validTo ? 'superseded' : m.active ? 'active' : 'faded',
          validFrom: m.validFrom.toISOString(),
        }));
        return jsonResult({ total, offset, limit, memories: lines });
      }),
  );

  registerForgetTool(server, services, scope, log);

  server.registerTool(
    'profile_get',
    {
      title: 'Profile (soul)',
      description: 'What is believed about the person, as Markdown: preferences, schedule, relationships, interests, goals, style.',
      inputSchema: z.strictObject({}),
      annotations: { readOnlyHint: true },
    },
    () =>
      guarded(log, 'profile_get', async () => ({
        content: [{ type: 'text', text: showStored(await services.profiles.soul(scope.id)) }],
      })),
  );

  const markdown = 'text/markdown';
  const soulMeta = { title: 'Profile (soul)', description: 'What is believed about the person', mimeType: markdown };
  server.registerResource('soul', 'nocturne://soul', soulMeta, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: markdown, text: showStored(await services.profiles.soul(scope.id)) }],
  }));
  const digestMeta = { title: 'Latest digest', description: 'What the latest sleep learned, changed and let fade', mimeType: markdown };
  server.registerResource('digest', 'nocturne://digest/latest', digestMeta, async (uri) => {
    const digest = await services.digestBook.latest(scope.id);
    const text = digest ? digest.content : 'No digest yet: one is written after a night in which something was learned.';
    return { contents: [{ uri: uri.href, mimeType: markdown, text: showStored(text) }] };
  });

  return server;
}
