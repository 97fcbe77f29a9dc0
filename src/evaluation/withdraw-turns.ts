/**
 * Withdrawing turns an evaluation put in a scope (the question it asked, the agent's reply, any
 * note), so the next question does not see them: rows (tags and memory sources go with them by
 * cascade), the full-text index (by its trigger) and vectors. Only the evaluation does this; a
 * person's forgetting goes through the forget service, which also redacts what was derived.
 */
import type { PrismaClient } from '../storage/prisma';
import type { VectorIndex } from '../memory/vectors/vector-index';

export interface TurnWithdrawalDeps {
  readonly prisma: PrismaClient;
  readonly vectorIndex: Pick<VectorIndex, 'delete'>;
  /** Finishes pending embeddings first, so no vector of a withdrawn row is written after it. */
  readonly drainEmbeddings: () => Promise<unknown>;
}

export async function withdrawTurns(deps: TurnWithdrawalDeps, scopeId: string, episodeIds: readonly string[]): Promise<void> {
  if (episodeIds.length === 0) return;
  await deps.drainEmbeddings();
  await deps.prisma.episode.deleteMany({ where: { scopeId, id: { in: [...episodeIds] } } });
  await deps.vectorIndex.delete(scopeId, episodeIds);
}
