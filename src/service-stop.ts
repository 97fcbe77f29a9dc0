/**
 * How the running service stops: the parts newest first, the whole stop bounded. Kept apart from
 * service.ts, which decides what starts and in which order; this file decides only how long each
 * part may take to stop and what happens to one that does not.
 */
import type { Logger } from './shared/logger';

/** The stop functions of the parts started, in start order, each with the name the log gives it. */
export type StopList = Array<[string, () => Promise<unknown>]>;

/**
 * The whole stop is bounded: SIGTERM must end the process within 10 s whatever it is waiting for
 * (a Bot API that hangs, a model call, an embedding). Each part gets what is left of the budget
 * minus a reserve for the parts after it; a part that does not finish in time is abandoned and
 * named in the log (its work is in a transaction or is redelivered, so nothing is lost; see
 * docs/reliability.md).
 */
export const STOP_BUDGET_MS = 8_000;
/**
 * When `npm start` exits whatever still holds it after SIGTERM (main.ts): past the budget, and
 * under Docker's default 10 s between `docker stop`'s SIGTERM and its SIGKILL.
 */
export const STOP_WATCHDOG_MS = 9_500;
const STOP_RESERVE_MS = 400;

/** Runs the stop functions newest first; one failing or hanging does not keep the others from running. */
export async function stopAll(stops: StopList, log: Logger): Promise<void> {
  const deadline = Date.now() + STOP_BUDGET_MS;
  const ordered = [...stops].reverse();
  const abandoned: string[] = [];
  for (const [i, [name, stop]] of ordered.entries()) {
    const allowed = Math.max(STOP_RESERVE_MS, deadline - Date.now() - STOP_RESERVE_MS * (ordered.length - 1 - i));
    let timer: NodeJS.Timeout | undefined;
    try {
      const finished = await Promise.race([stop().then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), allowed)))]);
      if (!finished) {
        abandoned.push(name);
        log.warn(`abandoned on stop: ${name} did not stop within ${allowed} ms`, { part: name, waitedMs: allowed });
      }
    } catch (error) {
      log.error(`${name} did not stop cleanly`, { error });
    } finally {
      clearTimeout(timer);
    }
  }
  if (abandoned.length > 0) log.warn('stopped with work abandoned', { abandoned });
}
