/**
 * `eval locomo --qa`: the whole product on LoCoMo with the configured model (see
 * src/evaluation/locomo-qa.ts): a fresh store in a temporary folder, the service as
 * `npm start` composes it (no channels, its clock simulated), answers judged by the same model.
 * Prints J overall and per category, tokens and latency per question; the last line is one JSON
 * object with the figures. Nothing is written outside the temporary folder, which is removed.
 */
import { evaluationConfig } from './eval-store-config';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../config/load-config';
import { createLanguageModel } from '../../llm/create-language-model';
import { LlmError, type LanguageModel } from '../../llm/language-model';
import { loadLocomo, type LocomoConversation } from '../../evaluation/locomo';
import { runLocomoQa, type QaReport, type SleepMode } from '../../evaluation/locomo-qa';
import { qaHarness } from '../../evaluation/qa-harness';
import { startService } from '../../service';
import { AppError, ValidationError } from '../../shared/errors';
import type { CommandContext } from '../command';
import { plural } from '../../shared/plural';

/** Categories asked by default: all but 5 (adversarial), as the Mem0 paper reports J. */
export const DEFAULT_CATEGORIES = [1, 2, 3, 4];
/** How the dataset's README reads the categories (the data does not name them). */
export const CATEGORY_NAMES: Record<string, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' };

function usageError(message: string): ValidationError {
  return new ValidationError(message, { code: 'cli.usage' });
}

function wholeNumber(raw: unknown, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw usageError(`--${name} must be a whole number of at least 1`);
  return n;
}

/** The conversations and questions the options select. */
export function selectQa(all: readonly LocomoConversation[], values: CommandContext['values']): LocomoConversation[] {
  const rawConversations = values.conversations as string | undefined;
  let chosen = [...all];
  if (rawConversations !== undefined) {
    if (/^\d+$/.test(rawConversations)) chosen = chosen.slice(0, wholeNumber(rawConversations, 'conversations'));
    else {
      const ids = rawConversations
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = ids.filter((id) => !all.some((c) => c.id === id));
      if (unknown.length > 0)
        throw usageError(`--conversations: no conversation ${unknown.join(', ')} in the file (it has ${all.map((c) => c.id).join(', ')})`);
      chosen = chosen.filter((c) => ids.includes(c.id));
    }
  }
  const categories = values.categories === undefined ? DEFAULT_CATEGORIES : String(values.categories).split(',').map(Number);
  if (categories.some((c) => !Number.isInteger(c) || c < 1 || c > 5))
    throw usageError('--categories must be a comma-separated list of LoCoMo categories 1 to 5');
  const perConversation = wholeNumber(values.questions, 'questions');
  return chosen.map((c) => ({ ...c, qa: c.qa.filter((q) => categories.includes(q.category)).slice(0, perConversation) }));
}

/** The configured model, with a first call that fails clearly when there is none to reach. */
async function configuredModel(config: Config, ctx: CommandContext): Promise<LanguageModel> {
  const { provider, model, ollamaHost } = config.llm;
  const probe = createLanguageModel(config.llm, { logger: ctx.logger.child({ component: 'llm' }), retry: { maxAttempts: 1 } });
  try {
    await probe.complete({ messages: [{ role: 'user', content: 'Answer with the word OK.' }], maxTokens: 5, temperature: 0, purpose: 'eval-probe' });
  } catch (error) {
    if (!(error instanceof LlmError)) throw error;
    const where = provider === 'ollama' ? `Ollama at ${ollamaHost} (LLM_PROVIDER=ollama, the default without ANTHROPIC_API_KEY)` : 'Anthropic';
    throw new AppError(`eval locomo --qa needs a language model, and ${model} through ${where} did not answer (${error.reason}).`, {
      code: 'eval.no_model',
      category: 'user',
      hint: 'Set LLM_PROVIDER=anthropic and ANTHROPIC_API_KEY, or start Ollama (`ollama serve`, `ollama pull <model>`) and set LLM_MODEL.',
      cause: error,
    });
  } finally {
    await probe.close();
  }
  return createLanguageModel(config.llm, { logger: ctx.logger.child({ component: 'llm' }) });
}

/**
 * The model's calls and tokens per purpose (reply, consolidation, eval-judge, ...); the prompt
 * cache's share of the input apart, since it is priced apart (read at a tenth, written at 1.25).
 */
interface PurposeUsage {
  calls: number;
  tokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

function counted(llm: LanguageModel, usage: Record<string, PurposeUsage>): LanguageModel {
  return {
    provider: llm.provider,
    model: llm.model,
    contextWindow: llm.contextWindow,
    async complete(request) {
      const response = await llm.complete(request);
      const entry = (usage[request.purpose] ??= { calls: 0, tokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
      entry.calls += 1;
      entry.tokens += response.usage.inputTokens + response.usage.outputTokens;
      entry.cacheReadTokens += response.usage.cacheReadTokens ?? 0;
      entry.cacheWriteTokens += response.usage.cacheWriteTokens ?? 0;
      return response;
    },
    close: () => llm.close(),
  };
}

function cacheNote(u: PurposeUsage): string {
  return u.cacheReadTokens + u.cacheWriteTokens === 0
    ? ''
    : `; of the input, ${u.cacheReadTokens} read from the prompt cache, ${u.cacheWriteTokens} written to it`;
}

function textReport(report: QaReport, header: string, usage: Record<string, PurposeUsage>): string[] {
  const problems = report.problems > 0 ? ` (${report.problems} with a degraded reply or a failed judge, counted WRONG)` : '';
  return [
    header,
    `J ${report.j} (${report.correct}/${report.questions} judged CORRECT)${problems}`,
    ...Object.entries(report.byCategory).map(
      ([cat, v]) => `  category ${cat} ${CATEGORY_NAMES[cat] ?? ''} (${v.questions} q): J ${v.j} (${v.correct}/${v.questions})`,
    ),
    `tokens per question (answering calls, input+output): mean ${report.tokensPerQuestion.mean}, p95 ${report.tokensPerQuestion.p95}`,
    `latency per question (agent reply): mean ${report.latencyMsPerQuestion.mean} ms, p95 ${report.latencyMsPerQuestion.p95} ms`,
    `sleep ${report.sleep.mode}: ${plural(report.sleep.nights, 'night')}, ${report.sleep.consolidations} with consolidation; ` +
      `ingest ${report.seconds.ingest} s, sleep ${report.seconds.sleep} s, questions ${report.seconds.questions} s`,
    `model tokens by purpose: ${
      Object.entries(usage)
        .map(([purpose, u]) => `${purpose} ${u.tokens} (${plural(u.calls, 'call')}${cacheNote(u)})`)
        .join(', ') || 'none'
    }`,
  ];
}

export async function runQaEval(ctx: CommandContext, file: string): Promise<number> {
  const sleep = String(ctx.values.sleep ?? 'nights') as SleepMode;
  if (!['nights', 'end', 'none'].includes(sleep)) throw usageError('--sleep must be nights, end or none');
  const conversations = selectQa(loadLocomo(file), ctx.values);
  const questions = conversations.reduce((n, c) => n + c.qa.length, 0);
  if (questions === 0) throw usageError('no question selected (see --conversations, --questions, --categories)');

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-eval-qa-'));
  const config = evaluationConfig(ctx.config, dir);
  const usage: Record<string, PurposeUsage> = {};
  let now = new Date(0);
  try {
    const llm = counted(await configuredModel(config, ctx), usage);
    const service = await startService(config, ctx.logger, { input: process.stdin, output: process.stderr }, { llm, clock: () => now });
    try {
      const { core } = service;
      const report = await runLocomoQa(
        conversations,
        qaHarness(service, core.llm, (at) => {
          now = at;
        }),
        { sleep, onProgress: (line) => process.stderr.write(`${line}\n`) },
      );
      const header =
        `LoCoMo QA ${path.basename(file)}: ${plural(report.conversations, 'conversation')}, ${plural(report.turns, 'turn')}, ${plural(report.questions, 'question')} ` +
        `(categories ${[...new Set(conversations.flatMap((c) => c.qa.map((q) => q.category)))].sort().join(',')}); model ${llm.provider} ${llm.model}, embedder ${core.embedder.name}`;
      const { items, ...figures } = report;
      void items;
      const json = {
        ...figures,
        model: `${llm.provider}:${llm.model}`,
        embedder: core.embedder.name,
        usage,
        reference: { mem0PaperJ: { fullContext: 72.9, mem0: 66.9, model: 'gpt-4o-mini' } },
      };
      ctx.out.write(ctx.json ? `${JSON.stringify(json)}\n` : `${textReport(report, header, usage).join('\n')}\n${JSON.stringify(json)}\n`);
      return 0;
    } finally {
      await service.stop();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
