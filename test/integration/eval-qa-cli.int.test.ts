/**
 * `npm run cli -- eval locomo --qa` as a person runs it, against loopback models: the Anthropic
 * double answers each question from the context the agent's prompt shows it (the gold answer's
 * words there, else "I don't know") and judges by comparing the generated answer with the gold
 * one, except one question it judges WRONG on purpose; the Ollama double gives the embeddings.
 * J and the per-category figures must be exactly what the double's verdicts make.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMisbehavingModel } from '../../bench/memory/misbehaving-model';
import { startAnthropicDouble, type AnthropicDouble } from '../doubles/anthropic-server';
import type { ScriptedLlmReply, SeenLlmRequest } from '../doubles/llm-script';
import { startOllamaDouble, type OllamaDouble } from '../doubles/ollama-server';
import { tempDir } from '../support/databases';
import { cleanEnv, runCli, type ProcessResult } from '../support/run-process';

const turn = (id: string, speaker: string, text: string) => ({ speaker, dia_id: id, text });

/** A LoCoMo-format conversation of two sessions, a week apart. */
const SAMPLE = {
  sample_id: 'conv-test',
  conversation: {
    speaker_a: 'Caroline',
    speaker_b: 'Melanie',
    session_1_date_time: '1:56 pm on 8 May, 2023',
    session_1: [
      turn('D1:1', 'Caroline', 'Hey Mel! I went to an LGBTQ support group yesterday and it was powerful.'),
      turn('D1:2', 'Melanie', 'That is great, Caroline. I spent the morning practicing my clarinet.'),
      turn('D1:3', 'Caroline', 'You still play the clarinet? Since when?'),
      turn('D1:4', 'Melanie', 'Since I was a kid. Our cat Oliver hates the noise though.'),
    ],
    session_2_date_time: '10:37 am on 15 May, 2023',
    session_2: [
      turn('D2:1', 'Caroline', 'I finished reading Becoming Nicole, it really inspired me.'),
      turn('D2:2', 'Melanie', 'I should read it. We are going camping at the lake next month.'),
      turn('D2:3', 'Caroline', 'Have fun! I am thinking of studying counseling.'),
    ],
    session_3_date_time: '9:00 am on 20 May, 2023',
  },
  qa: [
    { question: 'What instrument does Melanie play?', answer: 'clarinet', evidence: ['D1:2'], category: 4 },
    { question: 'What is the name of the cat of Melanie?', answer: 'Oliver', evidence: ['D1:4'], category: 1 },
    { question: 'Which book did Caroline finish reading?', answer: 'Becoming Nicole', evidence: ['D2:1'], category: 4 },
    { question: 'Where did Caroline grow up?', answer: 'Sweden', evidence: ['D1:1'], category: 3 },
    { question: 'What would Caroline study?', answer: 'counseling', evidence: ['D2:3'], category: 2 },
    { question: 'What did Melanie realize after her race?', adversarial_answer: 'self-care matters', evidence: ['D1:2'], category: 5 },
  ],
  observation: { note: 'derived fields are never read' },
};

/** The question the double judges WRONG whatever the answer says. */
const JUDGED_WRONG_ON_PURPOSE = 'Which book did Caroline finish reading?';

interface Verdict {
  question: string;
  gold: string;
  generated: string;
  correct: boolean;
}

/** What is left in a temporary folder, tsx's own cache aside. */
function leftIn(dir: string): string[] {
  return fs.readdirSync(dir).filter((name) => !name.startsWith('tsx-'));
}

function textOf(request: Omit<SeenLlmRequest, 'reply'>): string {
  return [request.system ?? '', ...request.messages.map((m) => m.text)].join('\n');
}

describe('CLI eval locomo --qa against loopback models', () => {
  let anthropic: AnthropicDouble;
  let ollama: OllamaDouble;
  let dir: string;
  let file: string;
  const verdicts: Verdict[] = [];
  const answered: Array<{ question: string; sawGold: boolean; context: string }> = [];
  let result: ProcessResult;
  let tmp: string;

  beforeAll(async () => {
    const rest = createMisbehavingModel({
      seed: 7,
      rates: { restateAsNew: 0, reextract: 0, filler: 0, placeholder: 0, omitField: 0, wrongId: 0, aboutAssistant: 0, cutOff: 0, changeAsNew: 0 },
    });
    anthropic = await startAnthropicDouble({
      responder: (request): ScriptedLlmReply | undefined => {
        const system = request.system ?? '';
        if (system.includes('label an answer to a question')) {
          const prompt = request.messages.at(-1)?.text ?? '';
          const question = /Question: (.*)/.exec(prompt)?.[1] ?? '';
          const gold = /Gold answer: (.*)/.exec(prompt)?.[1] ?? '';
          const generated = /Generated answer: (.*)/.exec(prompt)?.[1] ?? '';
          const correct = question !== JUDGED_WRONG_ON_PURPOSE && generated.toLowerCase().includes(gold.toLowerCase());
          verdicts.push({ question, gold, generated, correct });
          return {
            kind: 'text',
            text: JSON.stringify({ reasoning: 'compared with the gold answer', label: correct ? 'CORRECT' : 'WRONG' }),
            inputTokens: 300,
            outputTokens: 20,
          };
        }
        if (request.tools.length > 0) {
          const last = request.messages.filter((m) => m.role === 'user').at(-1)?.text ?? '';
          const item = SAMPLE.qa.find((q) => last.includes(q.question));
          if (item) {
            // As the system prompt asks: what is not shown is looked up first (one memory_search).
            if (!request.messages.some((m) => m.role === 'tool')) {
              return {
                kind: 'tool_use',
                calls: [{ id: `search-${answered.length}`, name: 'memory_search', arguments: { query: item.question } }],
                inputTokens: 500,
                outputTokens: 5,
              };
            }
            const gold = String(item.answer ?? '');
            const context = textOf(request).replace(item.question, '');
            const sawGold = gold !== '' && context.toLowerCase().includes(gold.toLowerCase());
            answered.push({ question: item.question, sawGold, context });
            return { kind: 'text', text: sawGold ? `From what I remember: ${gold}.` : "I don't know.", inputTokens: 1_000, outputTokens: 10 };
          }
        }
        return rest.responder(request);
      },
    });
    ollama = await startOllamaDouble();
    dir = tempDir();
    file = path.join(dir, 'locomo-test.json');
    fs.writeFileSync(file, JSON.stringify([SAMPLE]));
    tmp = path.join(dir, 'tmp');
    fs.mkdirSync(tmp);
    const env = cleanEnv({
      DATA_DIR: path.join(dir, 'data'),
      TMPDIR: tmp,
      LOG_LEVEL: 'warn',
      EMBEDDER: 'ollama',
      OLLAMA_HOST: ollama.url,
      LLM_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-eval-qa-test-0000',
      ANTHROPIC_BASE_URL: anthropic.url,
      // The sessions are short: each is worth a consolidation run.
      SLEEP_MIN_EPISODES: '1',
    });
    result = await runCli(['eval', 'locomo', '--qa', '--data', file], env);
  }, 180_000);

  afterAll(async () => {
    await anthropic?.stop();
    await ollama?.stop();
  });

  it('answers every non-adversarial question through the agent and judges each once', () => {
    expect(result.stderr).not.toMatch(/error:/);
    expect(result.code).toBe(0);
    const asked = SAMPLE.qa.filter((q) => q.category !== 5).map((q) => q.question);
    expect(answered.map((a) => a.question)).toEqual(asked);
    expect(verdicts.map((v) => v.question)).toEqual(asked);
    // The stored sessions reached the model: the clarinet turn was found for its question.
    expect(answered.find((a) => a.question === 'What instrument does Melanie play?')?.sawGold).toBe(true);
    // Questions are independent: no prompt shows an earlier question or answer.
    for (const [i, a] of answered.entries()) {
      for (const earlier of answered.slice(0, i)) expect(a.context).not.toContain(earlier.question);
      expect(a.context).not.toMatch(/From what I remember|I don't know/);
    }
    expect(verdicts.find((v) => v.question === JUDGED_WRONG_ON_PURPOSE)?.correct).toBe(false);
    expect(verdicts.find((v) => v.gold === 'Sweden')?.correct).toBe(false);
  });

  it('prints J overall and per category from the verdicts, and a JSON last line', () => {
    const lines = result.stdout.trim().split('\n');
    const correct = verdicts.filter((v) => v.correct).length;
    expect(correct).toBeGreaterThan(0);
    const j = Math.round((1000 * correct) / verdicts.length) / 10;
    expect(result.stdout).toContain(`J ${j} (${correct}/5 judged CORRECT)`);
    const byCategory = new Map<number, { n: number; right: number }>();
    for (const v of verdicts) {
      const category = SAMPLE.qa.find((q) => q.question === v.question)!.category;
      const entry = byCategory.get(category) ?? { n: 0, right: 0 };
      entry.n += 1;
      if (v.correct) entry.right += 1;
      byCategory.set(category, entry);
    }
    for (const [category, { n, right }] of byCategory) {
      expect(result.stdout).toMatch(new RegExp(`category ${category} \\S+ \\(${n} q\\): J ${Math.round((1000 * right) / n) / 10} \\(${right}/${n}\\)`));
    }
    expect(result.stdout).not.toMatch(/category 5/);
    const json = JSON.parse(lines.at(-1)!) as Record<string, any>;
    expect(json).toMatchObject({ conversations: 1, turns: 7, questions: 5, correct, j });
    expect(Object.keys(json.byCategory).sort()).toEqual(['1', '2', '3', '4']);
    expect(json.byCategory['4']).toEqual({ questions: 2, correct: byCategory.get(4)!.right, j: (byCategory.get(4)!.right / 2) * 100 });
    // Each answer is a memory_search call (500 + 5 tokens) and the answering call (1,000 + 10).
    expect(json.tokensPerQuestion).toEqual({ mean: 1515, p95: 1515 });
    expect(json.latencyMsPerQuestion.mean).toBeGreaterThan(0);
    expect(json.judgeTokens).toBe(5 * 320);
    expect(json.sleep).toEqual({ mode: 'nights', nights: 2, consolidations: 2 });
    expect(json.usage.reply).toMatchObject({ calls: 10, tokens: 5 * 1515 });
    // The replies mark the system prompt and soul for the cache: the first writes it, the next read it.
    expect(json.usage.reply.cacheWriteTokens).toBeGreaterThan(0);
    expect(json.usage.reply.cacheReadTokens).toBeGreaterThan(0);
    expect(result.stdout).toMatch(/reply \d+ \(10 calls; of the input, \d+ read from the prompt cache, \d+ written to it\)/);
    expect(json.usage.consolidation.calls).toBeGreaterThanOrEqual(2);
    expect(result.stdout).not.toContain('sk-eval-qa-test');
  });

  it('writes nothing outside its temporary folder, and removes that', () => {
    expect(leftIn(tmp)).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'data'))).toBe(false);
  });

  it('says clearly when no model answers', async () => {
    const env = cleanEnv({ DATA_DIR: path.join(dir, 'data2'), TMPDIR: tmp, LOG_LEVEL: 'warn', LLM_PROVIDER: 'ollama', OLLAMA_HOST: 'http://127.0.0.1:9' });
    const failed = await runCli(['eval', 'locomo', '--qa', '--data', file, '--questions', '1'], env);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/Eval locomo --qa needs a language model.*Ollama at http:\/\/127\.0\.0\.1:9/);
    expect(failed.stderr).toMatch(/LLM_PROVIDER=anthropic and ANTHROPIC_API_KEY/);
    expect(leftIn(tmp)).toEqual([]);
  }, 60_000);
});
