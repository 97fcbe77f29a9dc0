/**
 * `sleep --scope S [--dry-run]`: consolidates a scope now (like the bot's /sleep). The dry run
 * asks the model for the next batch's plan and prints it as a readable diff, applying nothing.
 */
import { uuidv7 } from '../../shared/ids';
import { renderPlanDiff } from '../../sleep/consolidation/diff';
import { writeResult, type Command } from '../command';
import { requireScope } from './scope-option';

export const sleepCommand: Command = {
  name: 'sleep',
  usage: 'sleep --scope S [--dry-run]',
  summary: 'consolidate a scope now (--dry-run: show the planned changes, apply nothing)',
  options: { scope: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  async run(ctx) {
    const { core, scope } = await requireScope(ctx, 'sleep');

    if (ctx.values['dry-run']) {
      const result = await core.sleep.planNextBatch(scope.id, { now: new Date(), runId: uuidv7() });
      if (result.status === 'failed') throw result.error;
      const calls = result.responses.length;
      const tokens = result.responses.reduce((n, r) => n + r.usage.inputTokens, 0);
      const text = result.plan ? `${renderPlanDiff(result.plan, result.shown)}\n\n(${calls} model call(s), ${tokens} input tokens)` : result.status === 'empty' ? 'nothing to consolidate' : `not planned: ${result.status}`;
      writeResult(ctx, { status: result.status, plan: result.plan ?? null, llmCalls: calls, inputTokens: tokens }, text);
      return 0;
    }

    const outcome = await core.scheduler.consolidateNow(scope.id);
    const run = await core.sleep.latestRun(scope.id, 'consolidate');
    const stats = (run?.stats ?? {}) as Record<string, unknown>;
    const counts = ['created', 'reinforced', 'updated', 'contradicted', 'decayed', 'connected', 'linked', 'insights', 'rejected'].filter((k) => typeof stats[k] === 'number' && stats[k] !== 0).map((k) => `${k} ${stats[k]}`);
    const text = [
      `${outcome.status}${outcome.detail ? `: ${outcome.detail}` : ''}`,
      run ? `episodes ${run.episodeCount}, model calls ${run.llmCalls}, tokens in ${run.inputTokens} / out ${run.outputTokens}` : '',
      counts.length ? counts.join(', ') : '',
    ].filter(Boolean).join('\n');
    writeResult(ctx, { outcome, run }, text);
    return outcome.status === 'failed' ? 1 : 0;
  },
};
