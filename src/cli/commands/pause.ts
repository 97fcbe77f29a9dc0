/**
 * `pause --scope S` / `resume --scope S`: stops or restarts consolidation of a scope (the bot's
 * /pause and /resume). Each change is an AuditEvent `pause`/`resume` on the scope; decay and
 * digests go on while paused (see docs/sleep.md).
 */
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

function pauseCommandFor(paused: boolean): CommandRunner {
  const name = paused ? 'pause' : 'resume';
  return {
    async run(ctx) {
      const { core, scope } = await requireScope(ctx, name);
      const changed = paused
        ? await core.scheduler.pause(scope.id, 'paused from the command line')
        : await core.scheduler.resume(scope.id, 'resumed from the command line');
      const text = changed ? `${paused ? 'paused' : 'resumed'} consolidation of ${scope.key}` : `${scope.key} was already ${paused ? 'paused' : 'running'}`;
      writeResult(ctx, { scope: scope.key, paused, changed }, text);
      return 0;
    },
  };
}

export const pauseCommand = pauseCommandFor(true);
export const resumeCommand = pauseCommandFor(false);
