/**
 * The parts of a running service the LoCoMo QA evaluation drives ({@link QaHarness}), taken from
 * the service `startService` composed, as `npm start` composes it. Like `service.ts`, this is a
 * composition root: it hands the domain's turn withdrawal the store it works on.
 */
import type { LanguageModel } from '../llm/language-model';
import { withdrawTurns } from './withdraw-turns';
import type { RunningService } from '../service';
import type { QaHarness } from './locomo-qa';

export function qaHarness(service: RunningService, judge: LanguageModel, setNow: (at: Date) => void): QaHarness {
  const { core, agent } = service;
  return {
    agent,
    episodes: core.episodeService,
    embeddingWorker: core.embeddingWorker,
    scheduler: core.scheduler,
    conversations: core.conversations,
    directory: core.directory,
    judge,
    setNow,
    async withdraw(scopeKey, ids) {
      const scope = await core.directory.findByKey(scopeKey);
      if (!scope) return;
      await withdrawTurns({ prisma: core.db.prisma, vectorIndex: core.vectorIndex, drainEmbeddings: () => core.embeddingWorker.drain() }, scope.id, ids);
    },
  };
}
