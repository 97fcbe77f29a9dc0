/**
 * `memory_forget`, in two steps like `/forget`: without `confirm` it removes nothing and returns
 * exactly what would go (every version of every memory, and how many messages would have the
 * words replaced) with a token; called again with the same memory id or words and that token, it
 * removes exactly what the preview listed, through the forget service (rows, indexes, vectors,
 * soul, digests, exports: as complete as `/forget`). A token from another preview, another scope,
 * or for another target is refused and nothing goes.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { ForgetPreview } from '../memory/forget/forget-service';
import type { Scope } from '../memory/records';
import { ValidationError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { FORGET_PREVIEW_TTL_MS, type ForgetTarget, type Refusal } from './forget-previews';
import type { McpDoorServices } from './memory-server';
import { errorResult, guarded, jsonResult } from './tool-results';

const REFUSALS: Record<Refusal, string> = {
  unknown:
    'memory_forget refused: that confirmation token is not one this server gave for this memory; nothing was ' +
    'forgotten. Call memory_forget without `confirm` to see what would go.',
  expired: 'memory_forget refused: the preview expired; nothing was forgotten. Call memory_forget without `confirm` ' + 'to see what would go now.',
  mismatch:
    'memory_forget refused: the token confirms a different preview (another memory or other words); nothing ' +
    'was forgotten. Preview again and confirm with the token it returns.',
};

const MAX_ID_CHARS = 100;
const MAX_WORDS_CHARS = 500;

export function registerForgetTool(server: McpServer, services: McpDoorServices, scope: Scope, log: Logger): void {
  server.registerTool(
    'memory_forget',
    {
      title: 'Forget (preview, then confirm)',
      description:
        'Forgets for good, in two calls. 1) Give `memoryId` OR `words`: nothing is removed; you get exactly ' +
        'what would go and a `confirm` token. Show it to the person. 2) Only if they agree, call again with ' +
        'the same `memoryId`/`words` and `confirm`.',
      inputSchema: z.strictObject({
        memoryId: z.string().trim().min(1).max(MAX_ID_CHARS).optional().describe('one memory (its earlier versions go with it)'),
        words: z.string().trim().min(1).max(MAX_WORDS_CHARS).optional().describe('every memory holding all these words, and the words in messages'),
        confirm: z.string().trim().min(1).max(MAX_ID_CHARS).optional().describe('the token the preview returned'),
      }),
      annotations: { destructiveHint: true },
    },
    (args) =>
      guarded(log, 'memory_forget', async () => {
        if ((args.memoryId === undefined) === (args.words === undefined)) {
          throw new ValidationError('memory_forget needs exactly one of `memoryId` or `words`', { code: 'mcp.forget_usage' });
        }
        const target: ForgetTarget = args.memoryId !== undefined ? { memoryId: args.memoryId } : { words: args.words! };
        if (args.confirm === undefined) return preview(target);
        const taken = services.forgetPreviews.take(scope.id, target, args.confirm);
        if ('refused' in taken) return errorResult(REFUSALS[taken.refused]);
        const result = await taken.preview.confirm({ reason: 'the owner confirmed memory_forget through MCP' });
        return jsonResult({
          forgotten: true,
          removedMemories: result.removedIds,
          messagesRedacted: result.episodesRedacted,
          digestsScrubbed: result.digestsScrubbed,
          exportFilesScrubbed: result.exportFilesScrubbed,
          notes: [
            ...(result.vectorsDeleted ? [] : ['the vector index could not be updated yet: the operator should run `npm run cli -- reindex`']),
            ...(result.checkpointed ? [] : ['old database pages are emptied at the next start']),
          ],
        });
      }),
  );

  async function preview(target: ForgetTarget) {
    const found: ForgetPreview =
      'memoryId' in target ? await services.forget.prepareForget(scope.id, target.memoryId) : await services.forget.forgetMatching(scope.id, target.words);
    if (found.matches.length === 0 && Object.values(found.counts).every((n) => n === 0)) {
      return jsonResult({ wouldForget: [], messagesToRedact: 0, note: 'nothing matches: there is nothing to forget' });
    }
    const token = services.forgetPreviews.hold(scope.id, target, found);
    return jsonResult({
      wouldForget: found.matches.map((m) => ({ id: m.id, category: m.category, content: m.content, state: m.state })),
      messagesToRedact: found.episodes,
      // Everything the confirm changes, counted by doing it and rolling back: memories, messages, summaries, entities, files.
      changes: found.counts,
      confirm: token,
      expiresInSeconds: FORGET_PREVIEW_TTL_MS / 1000,
      note: 'nothing was removed yet: show this to the person; if they agree, call memory_forget again with the ' + 'same arguments and this `confirm` token',
    });
  }
}
