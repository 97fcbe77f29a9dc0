/**
 * `sleep --scope S [--dry-run] [--retry]`: consolidates a scope now (like the bot's /sleep). The
 * dry run asks the model for the next batch's plan and prints it as a readable diff, applying
 * nothing. `--retry` first makes the messages consolidation gave up on eligible again (audited),
 * so a run after the model's trouble is over can still learn from them; without it, a run that
 * finds only such messages says how many there are and how to retry them.
 */
import { uuidv7 } from '../../shared/ids';
import { renderPlanDiff } from '../../sleep/consolidation/diff';
import { renderChangeSections } from '../../memory/digests/digest';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';
import { plural } from '../../shared/plural';

export const sleepCommand: CommandRunner = {
  async run(ctx) {
    const { core, scope } = await requireScope(ctx, 'sleep');

    if (ctx.values['dry-run']) {
      const result = await core.sleep.planNextBatch(scope.id, { now: new Date(), runId: uuidv7() });
      if (result.status === 'failed') throw result.error;
      const calls = result.responses.length;
      const tokens = result.responses.reduce((n, r) => n + r.usage.inputTokens, 0);
      const text = result.plan
        ? `${renderPlanDiff(result.plan, result.shown)}\n\n(${plural(calls, 'model call')}, ${plural(tokens, 'input token')})`
        : result.status === 'empty'
          ? 'nothing to consolidate'
          : `not planned: ${result.status}`;
      writeResult(ctx, { status: result.status, plan: result.plan ?? null, llmCalls: calls, inputTokens: tokens }, text);
      return 0;
    }

    const retried = ctx.values.retry ? await core.givenUp.retry(scope.id, 'asked from the command line (sleep --retry)') : 0;
    const outcome = await core.scheduler.consolidateNow(scope.id);
    const givenUp = await core.givenUp.count(scope.id);
    const run = outcome.runId ? await core.sleep.latestRun(scope.id, 'consolidate') : null;
    // What the run learned, changed and let fade, in the digest's words (its audit events).
    const changes = outcome.runId ? await core.digestBook.runChanges(scope.id, outcome.runId) : { items: [], reinforced: 0 };
    const sections = renderChangeSections(
      changes.items.map((i) => ({ ...i, text: `${i.text}   (memory ${i.memoryId})` })),
      changes.reinforced,
    ).map((line) => line.replace(/^## /, ''));
    const head = [
      ctx.values.retry ? `${plural(retried, 'message')} given up on before ${retried === 1 ? 'is' : 'are'} tried again` : '',
      `${outcome.status}${outcome.detail ? `: ${outcome.detail}` : ''}`,
      run && run.id === outcome.runId
        ? `${plural(run.episodeCount, 'episode')}, ${plural(run.llmCalls, 'model call')}, tokens in ${run.inputTokens} / out ${run.outputTokens}`
        : '',
      outcome.status === 'succeeded' && sections.length === 0 ? 'nothing in them changed what is known' : '',
      givenUp > 0
        ? `${plural(givenUp, 'message')} could not be learned from after ${plural(ctx.config.sleep.maxAttempts, 'try', 'tries')}; \`sleep --scope ${scope.key} --retry\` tries them again`
        : '',
    ].filter((line) => line !== '');
    const text = [...head, ...(sections.length > 0 ? ['', ...sections] : [])].join('\n').trimEnd();
    writeResult(ctx, { outcome, run, changes, ...(ctx.values.retry ? { retried } : {}), givenUp }, text);
    return outcome.status === 'failed' ? 1 : 0;
  },
};
