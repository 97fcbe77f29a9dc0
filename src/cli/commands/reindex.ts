/**
 * `reindex`: embeds everything that has no vector from the configured embedder. After a change
 * of embedder it first empties the vector index (vector search is refused until then). Resumable:
 * progress is kept per row in the database, so an interrupted reindex continues where it stopped.
 */
import { writeResult, type CommandRunner } from '../command';
import { plural } from '../../shared/plural';
import { createProgressBar } from '../progress';

export const reindexCommand: CommandRunner = {
  async run(ctx) {
    const core = await ctx.core();
    const started = Date.now();
    const state = core.indexGuard.state();
    const rebuilt = state.status === 'mismatch';
    if (rebuilt) {
      process.stderr.write(`the index holds ${state.stored.embedder} vectors; rebuilding it for ${state.configured.embedder}\n`);
      await core.indexGuard.reset();
    }
    const pending = await core.embeddingWorker.pending();
    const progress = createProgressBar({ total: pending, label: 'embedding' });
    const embedded = await core.embeddingWorker.drain((done) => progress.update(done, `${done}/${pending}`));
    progress.finish();
    const seconds = (Date.now() - started) / 1000;
    writeResult(
      ctx,
      { embedder: core.embedder.name, dimension: core.embedder.dimension, rebuilt, embedded, seconds },
      `${rebuilt ? 'rebuilt the index; ' : ''}embedded ${plural(embedded, 'row')} with ${core.embedder.name} in ${seconds.toFixed(1)} s`,
    );
    return 0;
  },
};
