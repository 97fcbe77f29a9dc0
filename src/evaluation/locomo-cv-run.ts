/**
 * `eval locomo --cv` on a store the in-sample run just filled: each question's candidates are
 * gathered once by a hybrid search built from the same parts as the service's, every turn of
 * each conversation's scope is read once, and the weights are cross-validated in memory
 * (`evaluation/locomo-cv.ts`). Here, beside the QA harness, because it takes its parts from
 * the composed core, which the CLI may not reach into (the doors never touch the database).
 */
import type { Core } from '../core';
import type { LocomoConversation } from './locomo';
import { cacheCandidates, evaluateLocomoCv, type CvReport } from './locomo-cv';
import { createHybridSearch } from '../memory/retrieval/hybrid-search';

export async function crossValidateLocomo(
  core: Core,
  conversations: readonly LocomoConversation[],
  k: readonly number[],
  status: (line: string, done?: boolean) => void,
): Promise<CvReport> {
  const search = createHybridSearch({
    prisma: core.db.prisma,
    episodes: core.episodes,
    memories: core.memories,
    fullText: core.fullText,
    embedder: core.embedder,
    index: core.vectorIndex,
    guard: core.indexGuard,
    logger: core.logger,
    contextRadius: 2,
  });
  const cache = await cacheCandidates({
    conversations,
    search,
    scopeIdOf: async (key) => (await core.directory.findByKey(key))!.id,
    scopeRows: async (scopeId) =>
      core.episodes.searchRows(
        scopeId,
        (await core.db.prisma.episode.findMany({ where: { scopeId }, select: { id: true } })).map((r) => r.id),
      ),
    onProgress: (done, total) => status(`cv: candidates ${done}/${total}`, done === total),
  });
  const report = await evaluateLocomoCv({ ...cache, defaults: search.weights, radius: search.radius, k, onProgress: (n) => status(`cv: ${n} rankings`) });
  status(`cv: ${report.pointsMeasured} weight settings measured in ${report.seconds.toFixed(1)} s`, true);
  return report;
}
