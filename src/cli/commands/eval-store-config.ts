/**
 * The configuration an evaluation runs the service on: a fresh store of its own in `dir` (SQLite
 * and a vector file there, never a configured Qdrant outside it), LoCoMo's dates read as UTC, no
 * channel, no admin API, no scheduled sleep (the evaluation runs nights itself, or none), no log
 * file, and no reply limits (questions come in a burst on a simulated clock).
 */
import path from 'node:path';
import type { Config } from '../../config/load-config';

export function evaluationConfig(base: Config, dir: string, agent: Partial<Config['agent']> = {}): Config {
  const dbFile = path.join(dir, 'eval.db');
  return {
    ...base,
    dataDir: dir,
    database: { provider: 'sqlite', url: `file:${dbFile}`, file: dbFile },
    vectors: { store: 'sqlite-vec', file: path.join(dir, 'vectors.db') },
    timeZone: 'UTC',
    telegram: undefined,
    webhook: undefined,
    adminToken: undefined,
    terminal: { ...base.terminal, mode: 'off' },
    sleep: { ...base.sleep, enabled: false },
    log: { ...base.log, file: undefined },
    agent: { ...base.agent, replyRatePerMinute: 0, replyDailyBudget: 0, ...agent },
  };
}
