/**
 * `eval locomo --data FILE [--k 5,10,25,50] [--json]`: evidence recall@k of hybrid search on a
 * LoCoMo-format file, on a fresh store in a temporary folder (the configured embedder and vector
 * store kind; nothing is written to your own database). `--database postgres` runs it on a
 * PostgreSQL server started for the run; `--crowd N [--crowd-scopes S]` asks the questions again
 * among N synthetic episodes in S other scopes (see eval-store.ts and evaluation/locomo-crowd.ts).
 *
 * `eval locomo --data FILE --qa [...]`: end-to-end question answering scored as J by the
 * configured model (see eval-qa.ts).
 *
 * `eval locomo --data FILE --context [--budget N]`: whether the evidence of each question reaches
 * the reply prompt when the conversation was told to the agent (see eval-context.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createCore } from '../../core';
import { evaluateLocomo, loadLocomo } from '../../evaluation/locomo';
import type { CvReport } from '../../evaluation/locomo-cv';
import { crossValidateLocomo } from '../../evaluation/locomo-cv-run';
import { createLocomoCrowdStage, type LocomoCrowdFigures } from '../../evaluation/locomo-crowd';
import { ValidationError } from '../../shared/errors';
import { writeResult, type CommandRunner } from '../command';
import { createStatusLine } from '../progress';
import { runQaEval } from './eval-qa';
import { runContextEval } from './eval-context';
import { plural } from '../../shared/plural';
import { openEvalStore, parseCrowdOptions, parseEvalDatabase } from './eval-store';

export const evalCommand: CommandRunner = {
  async run(ctx) {
    if (ctx.positionals[0] !== 'locomo') throw new ValidationError('usage: npm run cli -- eval locomo --data FILE', { code: 'cli.usage' });
    const file = ctx.values.data as string | undefined;
    if (!file || !fs.existsSync(file))
      throw new ValidationError('eval needs --data FILE, e.g. ../shared/datasets/locomo/locomo-dev.json', { code: 'cli.usage' });
    if (ctx.values.context) {
      if (ctx.values.qa || ctx.values.crowd !== undefined || ctx.values.database !== undefined)
        throw new ValidationError('--context runs on its own (not with --qa, --crowd or --database)', { code: 'cli.usage' });
      return runContextEval(ctx, file);
    }
    if (ctx.values.qa) {
      if (ctx.values.crowd !== undefined || ctx.values.database !== undefined)
        throw new ValidationError('--crowd and --database go with the recall evaluation, not with --qa', { code: 'cli.usage' });
      return runQaEval(ctx, file);
    }
    const k = String(ctx.values.k ?? '5,10,25,50')
      .split(',')
      .map(Number);
    if (k.some((x) => !Number.isInteger(x) || x < 1 || x > 200))
      throw new ValidationError('--k must be a comma-separated list of whole numbers from 1 to 200', { code: 'cli.usage' });
    const conversations = loadLocomo(file);
    if (ctx.values.cv && conversations.length < 2) {
      throw new ValidationError(
        `--cv needs at least 2 conversations (one is held out while the others tune the weights); ${file} has ${conversations.length}`,
        { code: 'cli.usage' },
      );
    }
    const crowdOptions = parseCrowdOptions(ctx.values);
    const store = await openEvalStore(ctx.config, parseEvalDatabase(ctx.values));
    const config = store.config;
    const status = createStatusLine();
    const core = await createCore(config, ctx.logger).catch(async (error: unknown) => {
      await store.remove();
      throw error;
    });
    try {
      const crowd = crowdOptions && createLocomoCrowdStage({ core, conversations, k, options: crowdOptions, status });
      const { foreignResults, ...report } = await evaluateLocomo({
        conversations,
        k,
        episodes: core.episodeService,
        search: core.search,
        scopeIdOf: async (key) => (await core.directory.findByKey(key))!.id,
        embedAll: async () => {
          let last = '';
          await core.embeddingWorker.drain((done, pending) => status((last = `embedding ${done}/${done + pending}`)));
          status(last || 'embedding done', true);
        },
        ...(crowd && { beforeQuestions: () => crowd.beforeQuestions() }),
        onProgress: (stage, done, total) => status(`${stage} ${done}/${total}`, done === total),
      });
      const crowdFigures = crowd && { ...crowd.figures(), foreignResults };
      const cv = ctx.values.cv ? await crossValidateLocomo(core, conversations, k, status) : undefined;
      const lines = [
        `LoCoMo ${path.basename(file)}: ${plural(report.conversations, 'conversation')}, ${plural(report.turns, 'turn')}, ${plural(report.questions, 'question')} with evidence`,
        `embedder ${core.embedder.name}, vectors ${config.vectors.store}, database ${store.database}`,
        `recall ${Object.entries(report.recall)
          .map(([x, v]) => `${x} ${v}`)
          .join('  ')}`,
        ...Object.entries(report.byCategory).map(
          ([cat, v]) =>
            `  category ${cat} (${v.questions} q): ${Object.entries(v.recall)
              .map(([x, r]) => `${x} ${r}`)
              .join('  ')}`,
        ),
        `ingest ${report.ingestSeconds.toFixed(1)} s, embedding ${report.embedSeconds.toFixed(1)} s, query p50 ${report.queryMs.p50} ms, p95 ${report.queryMs.p95} ms`,
        ...(crowdFigures ? crowdLines(crowdFigures) : []),
        ...(cv ? cvLines(cv) : []),
      ];
      const json = {
        ...report,
        embedder: core.embedder.name,
        vectorStore: config.vectors.store,
        database: store.database,
        ...(crowdFigures && { crowd: crowdFigures }),
        ...(cv && { cv }),
      };
      writeResult(ctx, json, lines.join('\n'));
      return 0;
    } finally {
      await core.close();
      await store.remove();
    }
  },
};

const recallText = (recall: Record<string, number>) =>
  Object.entries(recall)
    .map(([x, v]) => `${x} ${v}`)
    .join('  ');

/** The crowd's size and load time, and the same questions' figures before it was loaded. */
function crowdLines(crowd: LocomoCrowdFigures & { foreignResults: number }): string[] {
  return [
    `crowd ${crowd.episodes.toLocaleString('en')} episodes in ${crowd.scopes.toLocaleString('en')} other scopes (largest ${crowd.largestScope.toLocaleString('en')}), loaded in ${crowd.loadSeconds} s (${crowd.episodesPerSecond.toLocaleString('en')} episodes/s); results from outside the asked conversation: ${crowd.foreignResults}`,
    `before the crowd (the conversations alone): recall ${recallText(crowd.emptyStore.recall)}, query p50 ${crowd.emptyStore.queryMs.p50} ms, p95 ${crowd.emptyStore.queryMs.p95} ms`,
  ];
}

/** The cross-validated figures, the folds' choices and the weights chosen on all conversations. */
function cvLines(cv: CvReport): string[] {
  const weights = (w: Record<string, number>) =>
    Object.entries(w)
      .map(([name, v]) => `${name} ${v}`)
      .join(', ');
  return [
    `cross-validated (leave one conversation out; weights tuned on the others): recall ${recallText(cv.recall)}`,
    ...Object.entries(cv.byCategory).map(([cat, v]) => `  category ${cat} (${v.questions} q): ${recallText(v.recall)}`),
    ...cv.folds.map((f) => `  held out ${f.heldOut} (${f.questions} q): ${recallText(f.recall)}; tuned: ${weights(f.weights)}`),
    `replica of the defaults from the cached candidates: ${recallText(cv.replica)}`,
    `tuned on all conversations (in-sample): ${recallText(cv.tunedOnAll.recall)}; ${weights(cv.tunedOnAll.weights)}`,
  ];
}
