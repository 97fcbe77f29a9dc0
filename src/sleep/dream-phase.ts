/**
 * The dreaming phase of a consolidation job, after its batches: restatements merged, links
 * between similar memories (and orphans pruned), entity observations folded into attributes,
 * stale working memory ended, and the soul regenerated from what is now believed. Each step
 * stands alone: a failure is logged and recorded in the report, and does not undo the
 * consolidation before it; a step the day's token budget cannot pay for is put off to a later night.
 */
import type { LanguageModel, LlmResponse } from '../llm/language-model';
import { regenerateSoul } from '../memory/profiles/soul';
import type { Logger } from '../shared/logger';
import { errorText } from './consolidation-report';
import { linkSimilarMemories, mergeRestatements } from './dreaming';
import { foldEntityObservations } from './entities';
import type { SleepJobContext } from './sleep-jobs';
import type { SleepServiceDeps } from './sleep-service';
import { endStaleConversations } from './stale-conversations';
import { isBudgetError } from './token-budget';

/**
 * Runs the dreaming steps for one scope; the model's responses are added to `responses`, and the
 * result says what each step did, how long it took, or why it failed or was put off.
 */
export type DreamPhase = (
  scopeId: string,
  ctx: SleepJobContext,
  responses: LlmResponse[],
  llm: LanguageModel | undefined,
) => Promise<Record<string, number | string>>;

/** The dreaming phase on the sleep service's stores (see the file's header). */
export function createDreamPhase(deps: Pick<SleepServiceDeps, 'prisma' | 'embedder' | 'index' | 'guard' | 'soul'>, log: Logger): DreamPhase {
  const { prisma } = deps;
  return async function dream(scopeId, ctx, responses, llm) {
    const origin = { runId: ctx.runId, now: ctx.now };
    const out: Record<string, number | string> = {};
    const step = async (name: string, fn: () => Promise<void>) => {
      const started = Date.now();
      try {
        await fn();
        out[`${name}Ms`] = Date.now() - started;
      } catch (error) {
        if (isBudgetError(error)) {
          // Not sent: the day's budget is spent. The step runs on a later night.
          out[`${name}Deferred`] = errorText(error);
          log.info(`dreaming step "${name}" put off: daily token budget spent`, { scopeId, runId: ctx.runId });
          return;
        }
        out[`${name}Error`] = errorText(error);
        log.warn(`dreaming step "${name}" failed; consolidation is kept`, { scopeId, runId: ctx.runId, error });
      }
    };
    if (deps.embedder) {
      await step('merge', async () => {
        out.merged = await mergeRestatements({ prisma, embedder: deps.embedder! }, scopeId, origin);
      });
    }
    if (deps.embedder && deps.index && (!deps.guard || deps.guard.state().status === 'ready')) {
      await step('links', async () => {
        const r = await linkSimilarMemories({ prisma, embedder: deps.embedder!, index: deps.index! }, scopeId, origin);
        out.linked = r.linked;
        out.linksPruned = r.pruned;
      });
    }
    if (llm) {
      await step('entities', async () => {
        const r = await foldEntityObservations({ prisma, llm }, scopeId, origin);
        responses.push(...r.responses);
        out.entitiesFolded = r.entities;
      });
    }
    await step('stale', async () => {
      out.staleConversations = await endStaleConversations(prisma, scopeId, ctx.now);
    });
    await step('soul', async () => {
      const r = await regenerateSoul(prisma, scopeId, { ...deps.soul, now: ctx.now, runId: ctx.runId });
      out.soulVersion = r.version;
    });
    return out;
  };
}
