/**
 * `eval locomo --data FILE [--k 5,10,25,50] [--json]`: evidence recall@k of hybrid search on a
 * LoCoMo-format file, on a fresh embedded store in a temporary folder (the configured embedder
 * and vector store kind; nothing is written to your own database).
 *
 * `eval locomo --data FILE --qa [...]`: end-to-end question answering scored as J by the
 * configured model (see eval-qa.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCore } from '../../core';
import { evaluateLocomo, loadLocomo } from '../../memory/evaluation/locomo';
import type { CvReport } from '../../memory/evaluation/locomo-cv';
import { crossValidateLocomo } from '../../evaluation/locomo-cv-run';
import { ValidationError } from '../../shared/errors';
import { writeResult, type Command } from '../command';
import { createStatusLine } from '../progress';
import { runQaEval } from './eval-qa';
import { plural } from '../../shared/plural';

export const evalCommand: Command = {
  name: 'eval',
  usage: 'eval locomo --data FILE [--k 5,10,25,50] [--cv] | --qa [--conversations N|ids] [--questions N] [--categories 1,2,3,4] [--sleep nights|end|none]',
  summary: 'measure retrieval (LoCoMo evidence recall@k) or, with --qa, answers end to end (J, judged by the configured model), on a fresh temporary store',
  options: {
    data: { type: 'string' }, k: { type: 'string' }, cv: { type: 'boolean' },
    qa: { type: 'boolean' }, conversations: { type: 'string' }, questions: { type: 'string' }, categories: { type: 'string' }, sleep: { type: 'string' },
  },
  async run(ctx) {
    if (ctx.positionals[0] !== 'locomo') throw new ValidationError('usage: npm run cli -- eval locomo --data FILE', { code: 'cli.usage' });
    const file = ctx.values.data as string | undefined;
    if (!file || !fs.existsSync(file)) throw new ValidationError('eval needs --data FILE, e.g. ../shared/datasets/locomo/locomo-dev.json', { code: 'cli.usage' });
    if (ctx.values.qa) return runQaEval(ctx, file);
    const k = String(ctx.values.k ?? '5,10,25,50').split(',').map(Number);
    if (k.some((x) => !Number.isInteger(x) || x < 1 || x > 200)) throw new ValidationError('--k must be a comma-separated list of whole numbers from 1 to 200', { code: 'cli.usage' });
    const conversations = loadLocomo(file);
    if (ctx.values.cv && conversations.length < 2) {
      throw new ValidationError(`--cv needs at least 2 conversations (one is held out while the others tune the weights); ${file} has ${conversations.length}`, { code: 'cli.usage' });
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-eval-'));
    const dbFile = path.join(dir, 'eval.db');
    const config = {
      ...ctx.config,
      dataDir: dir,
      database: { provider: 'sqlite' as const, url: `file:${dbFile}`, file: dbFile },
      vectors: ctx.config.vectors.store === 'sqlite-vec' ? { store: 'sqlite-vec' as const, file: path.join(dir, 'vectors.db') } : ctx.config.vectors,
    };
    const core = await createCore(config, ctx.logger);
    const status = createStatusLine();
    try {
      const report = await evaluateLocomo({
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
        onProgress: (stage, done, total) => status(`${stage} ${done}/${total}`, done === total),
      });
      const cv = ctx.values.cv ? await crossValidateLocomo(core, conversations, k, status) : undefined;
      const lines = [
        `LoCoMo ${path.basename(file)}: ${plural(report.conversations, 'conversation')}, ${plural(report.turns, 'turn')}, ${plural(report.questions, 'question')} with evidence`,
        `embedder ${core.embedder.name}, vectors ${config.vectors.store}`,
        `recall ${Object.entries(report.recall).map(([x, v]) => `${x} ${v}`).join('  ')}`,
        ...Object.entries(report.byCategory).map(([cat, v]) => `  category ${cat} (${v.questions} q): ${Object.entries(v.recall).map(([x, r]) => `${x} ${r}`).join('  ')}`),
        `ingest ${report.ingestSeconds.toFixed(1)} s, embedding ${report.embedSeconds.toFixed(1)} s, query p50 ${report.queryMs.p50} ms, p95 ${report.queryMs.p95} ms`,
        ...(cv ? cvLines(cv) : []),
      ];
      writeResult(ctx, { ...report, embedder: core.embedder.name, vectorStore: config.vectors.store, ...(cv && { cv }) }, lines.join('\n'));
      return 0;
    } finally {
      await core.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};

const recallText = (recall: Record<string, number>) => Object.entries(recall).map(([x, v]) => `${x} ${v}`).join('  ');

/** The cross-validated figures, the folds' choices and the weights chosen on all conversations. */
function cvLines(cv: CvReport): string[] {
  const weights = (w: Record<string, number>) => Object.entries(w).map(([name, v]) => `${name} ${v}`).join(', ');
  return [
    `cross-validated (leave one conversation out; weights tuned on the others): recall ${recallText(cv.recall)}`,
    ...Object.entries(cv.byCategory).map(([cat, v]) => `  category ${cat} (${v.questions} q): ${recallText(v.recall)}`),
    ...cv.folds.map((f) => `  held out ${f.heldOut} (${f.questions} q): ${recallText(f.recall)}; tuned: ${weights(f.weights)}`),
    `replica of the defaults from the cached candidates: ${recallText(cv.replica)}`,
    `tuned on all conversations (in-sample): ${recallText(cv.tunedOnAll.recall)}; ${weights(cv.tunedOnAll.weights)}`,
  ];
}
