/**
 * Forgetting from the memory page: the same exact forget as `/forget N` (forget-service.ts
 * `prepareForget`: the memory with every version of its chain, and what else confirming changes,
 * counted by doing it in a transaction that is rolled back), previewed first, then confirmed.
 * Confirming prepares again and removes exactly what that preview lists, so a version added in
 * between goes too and is not left behind.
 */
import type { ForgetService } from '../forget/forget-service';
import type { ForgetCounts } from '../forget/forget-effects';
import { showStored } from '../output-filter';

/** What confirming would remove: one line per version, and how many. */
export interface PageForgetPreview {
  readonly text: string;
  readonly count: number;
  /** What else confirming changes (messages replaced by a placeholder, summaries, people, files). */
  readonly alsoChanges: ForgetCounts;
}

const STATE_NOTE: Readonly<Record<string, string>> = { active: '', faded: ' (faded)', superseded: ' (earlier version)' };

export interface PageForget {
  preview(scopeId: string, memoryId: string): Promise<PageForgetPreview>;
  /** Forgets the memory and its chain; returns how many memory rows went. */
  confirm(scopeId: string, memoryId: string): Promise<number>;
}

export function createPageForget(forget: Pick<ForgetService, 'prepareForget'>): PageForget {
  return {
    async preview(scopeId, memoryId) {
      const prepared = await forget.prepareForget(scopeId, memoryId);
      return {
        text: prepared.matches.map((m) => `• ${showStored(m.content)}${STATE_NOTE[m.state] ?? ''}`).join('\n'),
        count: prepared.matches.length,
        alsoChanges: prepared.counts,
      };
    },
    async confirm(scopeId, memoryId) {
      const prepared = await forget.prepareForget(scopeId, memoryId);
      const result = await prepared.confirm({ reason: 'forgotten by the person on the memory page' });
      return result.removedIds.length;
    },
  };
}
