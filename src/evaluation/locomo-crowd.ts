/**
 * `eval locomo --crowd N`: between embedding the conversations and asking their questions, the
 * questions are asked once in the store as it is (the conversations alone: the empty-store
 * figures), then N crowd episodes in S other scopes are loaded (`evaluation/crowd.ts`,
 * copying the conversations' own embedded turns), and the evaluation goes on in the crowded store.
 * Both runs in one process, on one store, so the comparison is direct.
 */
import type { Core } from '../core';
import { loadCrowd, planCrowdScopes, type CrowdReport } from './crowd';
import { askLocomo, type LocomoConversation, type QuestionReport } from './locomo';
import { createCrowdStore, readCrowdSources } from './crowd-store';

export interface CrowdOptions {
  readonly episodes: number;
  readonly scopes: number;
}

/** The crowd's figures as the eval reports them. */
export interface LocomoCrowdFigures extends CrowdReport {
  /** The same questions asked before the crowd was loaded. */
  readonly emptyStore: Pick<QuestionReport, 'recall' | 'byCategory' | 'queryMs'>;
}

export interface LocomoCrowdStage {
  /** For `evaluateLocomo`'s `beforeQuestions`. */
  beforeQuestions(): Promise<void>;
  /** The figures, once `beforeQuestions` has run. */
  figures(): LocomoCrowdFigures;
}

export function createLocomoCrowdStage(params: {
  core: Core;
  conversations: readonly LocomoConversation[];
  k: readonly number[];
  options: CrowdOptions;
  status: (line: string, done?: boolean) => void;
}): LocomoCrowdStage {
  const { core, conversations, k, options, status } = params;
  const scopeIdOf = async (key: string) => (await core.directory.findByKey(key))!.id;
  let result: LocomoCrowdFigures | null = null;
  return {
    async beforeQuestions() {
      const empty = await askLocomo({
        conversations,
        k,
        search: core.search,
        scopeIdOf,
        onProgress: (stage, done, total) => status(`empty store: ${stage} ${done}/${total}`),
      });
      status(`empty store: ${empty.questions} questions asked`, true);
      const sources = await readCrowdSources(core, await Promise.all(conversations.map((c) => scopeIdOf(`locomo:${c.id}`))));
      const sizes = planCrowdScopes({ episodes: options.episodes, scopes: options.scopes });
      const { report } = await loadCrowd({
        store: createCrowdStore(core),
        sources,
        sizes,
        onProgress: (done, total) => status(`crowd ${done}/${total}`),
      });
      status(`crowd of ${report.episodes} episodes in ${report.scopes} scopes loaded in ${report.loadSeconds} s`, true);
      result = { ...report, emptyStore: { recall: empty.recall, byCategory: empty.byCategory, queryMs: empty.queryMs } };
    },
    figures() {
      if (!result) throw new Error('the crowd stage has not run');
      return result;
    },
  };
}
