/**
 * `POST /scopes/:id/sleep`: consolidate a scope now (the scheduler's run, outside the sleep
 * window), plan its next batch without writing (`dryRun`), or first try again the messages
 * consolidation gave up on (`retryGivenUp`, audited).
 */
import { uuidv7 } from '../shared/ids';
import { ValidationError } from '../shared/errors';
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { errorResponses, sleepResponse } from './response-schemas';
import { scopeParams, sleepBody } from './schemas';

/** The services the sleep route uses. */
export type SleepRouteDeps = Pick<ApiOptions, 'directory' | 'sleep' | 'scheduler' | 'givenUp'>;

export function registerSleepRoutes(app: ApiApp, deps: SleepRouteDeps): void {
  const { directory, sleep, scheduler, givenUp } = deps;
  app.post('/scopes/:id/sleep', { schema: { params: scopeParams, body: sleepBody, response: { 200: sleepResponse, ...errorResponses } } }, async (request) => {
    const body = request.body;
    const scope = await directory.require(request.params.id);
    if (body.dryRun) {
      const plan = await sleep.planNextBatch(scope.id, { now: new Date(), runId: uuidv7() });
      return { status: plan.status, plan: plan.plan ?? null, llmCalls: plan.responses.length };
    }
    if (!body.retryGivenUp) return { outcome: await scheduler.consolidateNow(scope.id) };
    if (!givenUp) throw new ValidationError('this server cannot retry messages consolidation gave up on', { code: 'sleep.retry_unavailable' });
    const retried = await givenUp.retry(scope.id, 'asked through the admin API (POST /scopes/:id/sleep retryGivenUp)');
    return { retried, outcome: await scheduler.consolidateNow(scope.id), givenUp: await givenUp.count(scope.id) };
  });
}
