/**
 * What an invalid configuration is reported as: every problem at once, each naming its setting,
 * so the person fixing `.env` sees the whole list on the first start.
 */
import { AppError } from '../shared/errors';

/** One problem with one setting, printed to the person who has to fix it. */
export interface ConfigIssue {
  readonly setting: string;
  readonly problem: string;
}

/** Thrown when the configuration is invalid; carries every problem at once. */
export class ConfigError extends AppError {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(
      `Invalid configuration (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n` +
        issues.map((issue) => `  - ${issue.setting}: ${issue.problem}`).join('\n'),
      {
        code: 'config.invalid',
        category: 'user',
        hint: 'Fix the settings above in the environment or in .env (see .env.example and the README).',
      },
    );
    this.name = 'ConfigError';
    this.issues = issues;
  }
}
