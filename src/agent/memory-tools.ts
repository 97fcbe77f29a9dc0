/**
 * The memory tools given to the model (seed 002): `memory_search` (with `includeFaded`, deep
 * recall: faded memories too, marked, and revived once found), `memory_get`, `memory_save` (a note
 * in today's daily log) and `memory_update` (long-term memory: create, append, replace).
 *
 * Scope binding is the runtime's, never the model's: the definitions have no scope argument,
 * unknown arguments are refused, and {@link MemoryTools.bind} closes over the scope of the message
 * being answered, so every lookup filters by it and an id from another scope reads "not found"
 * exactly like an id that does not exist. Writes go through the memory domain's store (audited,
 * in a transaction, every rule of memory-guards.ts enforced: a refusal comes back to the model as
 * the rule's message), and every write is refused while the conversation the model sees holds a
 * message that tries to instruct the memory system (prompt injection: the model may have been
 * talked into the write, whatever evidence it would cite).
 *
 * A `memory_save` note is the person's words relayed by the agent: an `agent` episode marked
 * `relayedFrom` (the message being answered), which sleep consolidation accepts as evidence and
 * learns from as "observed".
 *
 * A memory that is one side of an open contradiction is annotated in search and get results the
 * way the reply prompt shows it (conflicts.ts `conflictNote`): the other side, both dates and
 * sources, and which is likely current.
 */
import { z } from 'zod';
import type { LlmTool, LlmToolCall } from '../llm/language-model';
import type { MemoryStore } from '../memory/memories/memory-store';
import type { EpisodeService, ScopeDescriptor } from '../memory/episodes/episode-service';
import type { HybridSearch } from '../memory/retrieval/hybrid-search';
import { AppError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { MEMORY_CATEGORIES } from '../memory/memories/categories';
import { contentProblem, looksLikeInjection, RELAYED_FROM } from '../memory/memories/memory-guards';
import { conflictNote, type Conflict } from '../memory/memories/conflicts';

/** The answer to one tool call, as it goes back to the model. */
export interface ToolResult {
  readonly content: string;
  readonly isError: boolean;
  /** Memories written by the call (for the reply's log and metadata). */
  readonly memoryIds?: readonly string[];
  readonly noteEpisodeId?: string;
}

/** What a tool call is bound to: the scope and turn of the message being answered. */
export interface ToolBinding {
  readonly scopeId: string;
  readonly scope: ScopeDescriptor;
  readonly channel: string;
  /** The person's message being answered: the evidence of what the model saves. */
  readonly userEpisodeId: string;
  readonly now: Date;
  /** The scope's time zone from its policy (the reminder tools read local times in it). */
  readonly timeZone?: string;
  /**
   * The model's context holds a message that tries to instruct the memory system (this message,
   * an earlier turn, or an earlier episode shown as context): memory writes are refused for the
   * whole reply, since whatever the model asks to store may come from that message.
   */
  readonly instructionInContext?: boolean;
}

export interface BoundTools {
  execute(call: LlmToolCall): Promise<ToolResult>;
}

export interface MemoryTools {
  readonly definitions: readonly LlmTool[];
  bind(binding: ToolBinding): BoundTools;
}

export interface MemoryToolsDeps {
  readonly memories: MemoryStore;
  readonly search: HybridSearch;
  readonly episodes: EpisodeService;
  readonly logger: Logger;
  /** Longest tool result sent back, in characters (default 4,000). */
  readonly maxResultChars?: number;
}

const searchArgs = z.strictObject({
  query: z.string().trim().min(1).max(500),
  limit: z.number().int().min(1).max(10).optional(),
  includeFaded: z.boolean().optional(),
});
const getArgs = z.strictObject({ id: z.string().trim().min(1).max(100) });
const saveArgs = z.strictObject({ note: z.string().trim().min(1).max(2_000) });
const updateArgs = z.strictObject({
  mode: z.enum(['create', 'append', 'replace']),
  content: z.string().trim().min(1).max(1_000),
  id: z.string().trim().min(1).max(100).optional(),
  category: z.enum(MEMORY_CATEGORIES).optional(),
});

export const MEMORY_TOOL_DEFINITIONS: readonly LlmTool[] = [
  {
    name: 'memory_search',
    description:
      'Search what you remember about this person: long-term memories and past conversation turns. Use it when the answer may depend on something said before that is not in the prompt.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'what to look for, in plain words' },
        limit: { type: 'integer', minimum: 1, maximum: 10 },
        includeFaded: {
          type: 'boolean',
          description:
            'also search memories that have faded (not confirmed for a long time; marked "faded"), when the person ' +
            'asks whether you remember something. A faded memory found this way is remembered again. ' +
            'Needs words the memory contains.',
        },
      },
      required: ['query'],
    },
  },
  {
    name: 'memory_get',
    description: 'Read one memory or past turn in full, by the id memory_search returned.',
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
  {
    name: 'memory_save',
    description:
      "Write a short note in today's log: a fact, decision or event of today worth keeping (it is consolidated into long-term memory while you sleep).",
    parameters: { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] },
  },
  {
    name: 'memory_update',
    description:
      'Change long-term memory about the person. mode "create" adds a memory; "append" adds to memory `id`; "replace" rewrites memory `id` (the old version is kept as history). Third person, facts about the person only.',
    parameters: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['create', 'append', 'replace'] },
        content: { type: 'string' },
        id: { type: 'string', description: 'the memory to change (append, replace)' },
        category: { type: 'string', enum: [...MEMORY_CATEGORIES] },
      },
      required: ['mode', 'content'],
    },
  },
];

function problemsOf(error: z.ZodError): string {
  return error.issues
    .map((i) =>
      i.code === 'unrecognized_keys'
        ? `unknown argument(s) ${i.keys.join(', ')} (the scope is fixed by the conversation)`
        : `${i.path.join('.') || 'arguments'}: ${i.message}`,
    )
    .join('; ');
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (cut)`;
}

export function createMemoryTools(deps: MemoryToolsDeps): MemoryTools {
  const log = deps.logger.child({ component: 'memory-tools' });
  const maxChars = deps.maxResultChars ?? 4_000;
  const { memories, episodes } = deps;

  /** The guards' verdict on a memory text, said to the model the way it can fix it. */
  function persona(content: string): string | undefined {
    const problem = contentProblem(content);
    if (problem?.code === 'memory.injection') return 'the text reads as an instruction; it was not stored';
    if (problem) return 'memories are about the person, not about the assistant; write it in the third person about them';
    return undefined;
  }

  return {
    definitions: MEMORY_TOOL_DEFINITIONS,
    bind(b) {
      const origin = { now: b.now, reason: 'memory_update tool (reply)' };
      /** Why memory writes are refused for this reply, if they are (checked on the message answered too). */
      let refusal: Promise<string | undefined> | undefined;
      const writesRefused = () =>
        (refusal ??= (async () => {
          const answered = await episodes.get(b.scopeId, b.userEpisodeId);
          if (b.instructionInContext || (answered && looksLikeInjection(answered.content))) {
            return 'nothing was stored: the conversation holds a message that tries to instruct the memory system, so memory writes are refused for this reply';
          }
          return undefined;
        })());
      // A memory that is one side of an open contradiction is shown as such, with the other side.
      const conflictsOf = () =>
        memories
          .conflicts(b.scopeId)
          .catch((error: unknown) => (log.warn('conflicts unavailable for a tool call', { scopeId: b.scopeId, error }), [] as Conflict[]));
      const noteOf = (id: string, conflicts: readonly Conflict[]) => {
        const note = conflictNote(id, conflicts);
        return note ? ` ${note}` : '';
      };
      const handlers: Record<string, (raw: Record<string, unknown>) => Promise<ToolResult>> = {
        async memory_search(raw) {
          const args = searchArgs.parse(raw);
          const { results } = await deps.search.search({
            scopeId: b.scopeId,
            semanticQuery: args.query,
            limit: args.limit ?? 5,
            includeFaded: args.includeFaded,
            now: b.now,
          });
          if (results.length === 0) return { content: 'nothing found', isError: false };
          const conflicts = results.some((r) => r.kind === 'memory') ? await conflictsOf() : [];
          // Deep recall: the faded memories returned were asked for, and the reply will use them.
          const recalled = results.filter((r) => r.faded).map((r) => r.id);
          if (recalled.length > 0) {
            await memories.revive({ scopeId: b.scopeId, ids: recalled }, { now: b.now, reason: 'recalled: memory_search with includeFaded (reply)' });
          }
          const lines = results.map((r) =>
            r.kind === 'memory'
              ? `${r.id} memory [${r.category ?? 'fact'}, confidence ${(r.confidence ?? 0).toFixed(2)}${r.faded ? ', faded' : ''}] ${r.content}${noteOf(r.id, conflicts)}`
              : `${r.id} turn ${r.timestamp.toISOString().slice(0, 16)} ${r.role === 'user' ? (r.author ?? 'person') : 'you'}: ${r.content}`,
          );
          return { content: lines.join('\n'), isError: false };
        },
        async memory_get(raw) {
          const { id } = getArgs.parse(raw);
          const memory = await memories.get(b.scopeId, id);
          if (memory)
            return {
              content: `${memory.id} memory [${memory.category}, confidence ${memory.confidence.toFixed(2)}${memory.active ? '' : ', faded'}${memory.validTo ? ', superseded' : ''}] since ${memory.validFrom.toISOString().slice(0, 10)}: ${memory.content}${noteOf(memory.id, await conflictsOf())}`,
              isError: false,
            };
          const episode = await episodes.get(b.scopeId, id);
          if (episode)
            return {
              content: `${episode.id} turn ${episode.timestamp.toISOString().slice(0, 16)} ${episode.role === 'user' ? (episode.author ?? 'person') : 'you'}: ${episode.content}`,
              isError: false,
            };
          return { content: `not found: no memory or turn ${id}`, isError: true };
        },
        async memory_save(raw) {
          const { note } = saveArgs.parse(raw);
          if (looksLikeInjection(note)) return { content: 'the note reads as an instruction; it was not saved', isError: true };
          const refused = await writesRefused();
          if (refused) return { content: refused, isError: true };
          // The person's words relayed: evidence for sleep consolidation, learned as "observed".
          const metadata = { kind: 'note', day: b.now.toISOString().slice(0, 10), [RELAYED_FROM]: b.userEpisodeId };
          const { episode } = await episodes.ingest(b.scope, { role: 'agent', content: note, channel: b.channel, timestamp: b.now.toISOString(), metadata });
          return { content: `saved in today's log (${b.now.toISOString().slice(0, 10)})`, isError: false, noteEpisodeId: episode?.id };
        },
        async memory_update(raw) {
          const args = updateArgs.parse(raw);
          const problem = persona(args.content);
          if (problem) return { content: problem, isError: true };
          const refused = await writesRefused();
          if (refused) return { content: refused, isError: true };
          if (args.mode === 'create') {
            const written = await memories.remember(
              {
                scopeId: b.scopeId,
                category: args.category ?? 'fact',
                content: args.content,
                confidence: 0.7,
                sourceType: 'observed',
                sourceEpisodeIds: [b.userEpisodeId],
              },
              origin,
            );
            const id = written.memory.id;
            const said = written.action === 'created' ? `created memory ${id}` : `already known: ${written.action} memory ${written.restated} (now ${id})`;
            return { content: said, isError: false, memoryIds: [id] };
          }
          if (!args.id) return { content: `mode "${args.mode}" needs the id of the memory to change`, isError: true };
          const id = args.id;
          const current = await memories.get(b.scopeId, id);
          if (!current) return { content: `not found: no memory ${id}`, isError: true };
          if (current.validTo)
            return { content: `memory ${id} was superseded by ${current.supersededById ?? 'a newer version'}; change that one`, isError: true };
          const content = args.mode === 'append' ? `${current.content.replace(/[.\s]*$/, '')}. ${args.content}` : args.content;
          const { current: next } = await memories.revise(
            { scopeId: b.scopeId, id, change: { content, category: args.category, sourceEpisodeIds: [b.userEpisodeId] } },
            { ...origin, reason: `memory_update ${args.mode} (reply)` },
          );
          return { content: `memory ${id} is now ${next.id}: ${next.content}`, isError: false, memoryIds: [next.id] };
        },
      };

      return {
        async execute(call) {
          const handler = handlers[call.name];
          if (!handler) return { content: `unknown tool ${call.name}; available: ${Object.keys(handlers).join(', ')}`, isError: true };
          try {
            const result = await handler(call.arguments ?? {});
            return { ...result, content: clip(result.content, maxChars) };
          } catch (error) {
            if (error instanceof z.ZodError) return { content: `invalid arguments for ${call.name}: ${problemsOf(error)}`, isError: true };
            if (error instanceof AppError && error.category === 'user') return { content: error.message, isError: true };
            log.warn('memory tool failed', { tool: call.name, scopeId: b.scopeId, error });
            return { content: `${call.name} failed; answer without it`, isError: true };
          }
        },
      };
    },
  };
}
