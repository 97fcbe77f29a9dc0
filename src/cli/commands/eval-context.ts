/**
 * `eval locomo --context [--budget N] [--conversations N|ids]`: whether what was said reaches the
 * reply prompt (see src/evaluation/locomo-context.ts), on a fresh store in a temporary folder, the
 * service as `npm start` composes it (no channels, sleep off, its clock simulated) with an
 * in-process model that answers "ok" and records the request: no network, no model cost, and the
 * same figures on every run. `--budget` is the reply's context budget (AGENT_MEMORY_TOKENS).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadLocomo } from '../../evaluation/locomo';
import { createOkModel, runLocomoContext, type ContextReport } from '../../evaluation/locomo-context';
import { qaHarness } from '../../evaluation/qa-harness';
import { startService } from '../../service';
import { evaluationConfig } from './eval-store-config';
import { ValidationError } from '../../shared/errors';
import { plural } from '../../shared/plural';
import type { CommandContext } from '../command';
import { CATEGORY_NAMES, selectQa } from './eval-qa';

function textReport(report: ContextReport, header: string): string[] {
  return [
    header,
    `contextRecall ${report.contextRecall} (share of evidence turns whose text reached the prompt, mean over questions)`,
    ...Object.entries(report.byCategory).map(([cat, v]) => `  category ${cat} ${CATEGORY_NAMES[cat] ?? ''} (${v.questions} q): ${v.contextRecall}`),
    `prompt tokens p50 ${report.promptTokens.p50}, p95 ${report.promptTokens.p95}; the whole conversation instead: p50 ${report.fullContextPromptTokens.p50}, p95 ${report.fullContextPromptTokens.p95}`,
    `reply overhead (all but the model) p50 ${report.replyOverheadMs.p50} ms, p95 ${report.replyOverheadMs.p95} ms`,
    `delivery ${report.seconds.delivery} s, questions ${report.seconds.questions} s`,
  ];
}

export async function runContextEval(ctx: CommandContext, file: string): Promise<number> {
  const rawBudget = ctx.values.budget;
  const budget = rawBudget === undefined ? ctx.config.agent.memoryTokens : Number(rawBudget);
  if (!Number.isInteger(budget) || budget < 0 || budget > 1_000_000)
    throw new ValidationError('--budget must be a whole number of tokens from 0 to 1000000', { code: 'cli.usage' });
  // Every question with evidence is asked (all five categories), as the recall evaluation asks them.
  const perConversation = ctx.values.questions === undefined ? undefined : Number(ctx.values.questions);
  const conversations = selectQa(loadLocomo(file), { ...ctx.values, categories: '1,2,3,4,5' }).map((c) => ({
    ...c,
    questions: c.questions.slice(0, perConversation),
  }));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-eval-context-'));
  const config = evaluationConfig(ctx.config, dir, { memoryTokens: budget });
  let now = new Date(0);
  const model = createOkModel();
  try {
    const service = await startService(config, ctx.logger, { input: process.stdin, output: process.stderr }, { llm: model, clock: () => now });
    try {
      const { core, agent } = service;
      const harness = {
        ...qaHarness(service, model, (at) => {
          now = at;
        }),
        agent,
        model,
      };
      const report = await runLocomoContext(conversations, harness, (line) => process.stderr.write(`${line}\n`));
      const header =
        `LoCoMo context ${path.basename(file)}: ${plural(report.conversations, 'conversation')} (${conversations.map((c) => c.id).join(', ')}), ` +
        `${plural(report.turns, 'turn')}, ${plural(report.questions, 'question')} with evidence; budget ${budget} tokens, embedder ${core.embedder.name}`;
      const { items, ...figures } = report;
      void items;
      const json = { ...figures, budget, conversationIds: conversations.map((c) => c.id), embedder: core.embedder.name };
      ctx.out.write(ctx.json ? `${JSON.stringify(json)}\n` : `${textReport(report, header).join('\n')}\n${JSON.stringify(json)}\n`);
      return 0;
    } finally {
      await service.stop();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
