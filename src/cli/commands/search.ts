/**
 * `search --scope S --query Q [--limit K] [--strategy X] [--topic T] [--entity E] [--json]`:
 * hybrid search in one scope. `--topic` and `--entity` (comma-separated for several) keep the
 * episodes tagged with one of them: tags given at import, or learned during sleep (docs/sleep.md).
 */
import { ValidationError } from '../../shared/errors';
import type { SearchStrategy } from '../../memory/retrieval/memory-query';
import { writeResult, type CommandRunner } from '../command';
import { requireScope } from './scope-option';

const STRATEGIES: readonly SearchStrategy[] = ['hybrid', 'semantic', 'keyword', 'temporal'];

/** "a, b" as ["a", "b"]; absent as undefined (no filter). */
function listOption(value: unknown): string[] | undefined {
  if (typeof value !== 'string') return undefined;
  const items = value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  return items.length > 0 ? items : undefined;
}

export const searchCommand: CommandRunner = {
  async run(ctx) {
    const strategy = (ctx.values.strategy as SearchStrategy | undefined) ?? 'hybrid';
    if (!STRATEGIES.includes(strategy)) throw new ValidationError(`--strategy must be one of ${STRATEGIES.join(', ')}`, { code: 'cli.usage' });
    const limit = ctx.values.limit === undefined ? 10 : Number(ctx.values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ValidationError('--limit must be a whole number from 1 to 200', { code: 'cli.usage' });
    const { core, scope } = await requireScope(ctx, 'search');
    const { results, notes } = await core.search.search({
      scopeId: scope.id,
      semanticQuery: ctx.values.query as string | undefined,
      limit,
      strategy,
      topics: listOption(ctx.values.topic),
      entities: listOption(ctx.values.entity),
    });
    const json = {
      results: results.map((r) => ({
        kind: r.kind,
        id: r.id,
        externalId: r.externalId,
        content: r.content,
        timestamp: r.timestamp.toISOString(),
        score: r.score,
        parts: r.parts,
        sourceEpisodes: r.sourceEpisodes ?? [],
      })),
      notes,
    };
    const text = [
      ...notes.map((note) => `note: ${note}`),
      ...(results.length === 0
        ? ['no results']
        : results.map((r, i) => {
            const parts = Object.entries(r.parts)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ');
            return `${String(i + 1).padStart(2)}. [${r.kind}] ${r.score.toFixed(3)}  ${r.content.replace(/\s+/g, ' ').slice(0, 140)}\n      ${r.timestamp.toISOString().slice(0, 10)}${r.externalId ? `  ${r.externalId}` : ''}  (${parts})`;
          })),
    ].join('\n');
    writeResult(ctx, json, text);
    return 0;
  },
};
