/**
 * What the agent integration tests share: a core on real SQLite files with the real model SDK
 * pointed at a loopback double (every LlmRequest recorded before it goes out), and a tiny
 * rule-following "model" that answers each kind of call the agent makes (and sleep
 * consolidation, for tests that follow a conversation into sleep) from what its prompt contains.
 */
import { loadConfig } from '../../src/config/load-config';
import { createCore, type Core } from '../../src/core';
import { createLanguageModel } from '../../src/llm/create-language-model';
import type { LanguageModel, LlmRequest } from '../../src/llm/language-model';
import { createHashEmbedder } from '../../src/vectors/embedders/hash-embedder';
import type { LlmResponder, ScriptedLlmReply, SeenLlmRequest } from '../doubles/llm-script';
import { memoryLogger } from '../support/logger';

export interface AgentCore {
  readonly core: Core;
  /** Every request the agent (and compaction) made, as the port saw it. */
  readonly requests: LlmRequest[];
  readonly lines: () => string[];
}

/** Records each request, then lets the real adapter send it. */
function recording(model: LanguageModel, requests: LlmRequest[]): LanguageModel {
  return {
    provider: model.provider,
    model: model.model,
    contextWindow: model.contextWindow,
    close: () => model.close(),
    complete: (r) => (requests.push(r), model.complete(r)),
  };
}

export async function openAgentCore(params: {
  dataDir: string;
  provider: 'anthropic' | 'ollama';
  url: string;
  env?: Record<string, string>;
}): Promise<AgentCore> {
  const env: Record<string, string> =
    params.provider === 'anthropic'
      ? { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-test-agent-0000000', ANTHROPIC_BASE_URL: params.url }
      : { LLM_PROVIDER: 'ollama', OLLAMA_HOST: params.url, LLM_MODEL: 'llama3.2' };
  const config = loadConfig({ env: { DATA_DIR: params.dataDir, LOG_LEVEL: 'debug', ...env, ...params.env }, envFile: false });
  const { logger, lines } = memoryLogger();
  const requests: LlmRequest[] = [];
  // Fast retries: a model that is down is reported in milliseconds, not seconds.
  const llm = recording(createLanguageModel(config.llm, { logger, retry: { baseDelayMs: 1, maxDelayMs: 2 } }), requests);
  const core = await createCore(config, logger, { embedder: createHashEmbedder({ dimension: 256 }), llm });
  return { core, requests, lines };
}

/** The numbered turns of a flush prompt: `[n] person (Ana): text`. */
export function flushTurns(prompt: string): Array<{ n: number; role: 'person' | 'assistant'; text: string }> {
  const out: Array<{ n: number; role: 'person' | 'assistant'; text: string }> = [];
  for (const line of prompt.split('\n')) {
    const m = /^\[(\d+)\] (person|assistant)[^:]*: (.*)$/.exec(line);
    if (m) out.push({ n: Number(m[1]), role: m[2] as 'person' | 'assistant', text: m[3]! });
  }
  return out;
}

export interface ModelRules {
  /** Facts the flush extracts: called per person turn; return a fact content or undefined. */
  fact?: (text: string) => string | undefined;
  /** Makes the next flush (or summary, or reply) fail with this HTTP status. */
  fail?: { flush?: number; summary?: number; reply?: number };
  /**
   * Sleep consolidation: called per episode line of the prompt (`who` as the prompt labels it,
   * e.g. "user (Ana)", "agent (context only)"); return a memory content to learn from it, citing
   * that episode. The system decides whether the citation is evidence.
   */
  learn?: (text: string, who: string) => string | undefined;
  /** A reply for this request instead of the echo. */
  reply?: (seen: Omit<SeenLlmRequest, 'reply'>) => ScriptedLlmReply | undefined;
}

/** A "model" that reads the agent's prompts: flush -> JSON facts, summary -> a short text, end -> JSON memory, reply -> `ok: <last message>`. */
export function agentModel(rules: ModelRules): LlmResponder {
  return (seen) => {
    const system = seen.system ?? '';
    const last = seen.messages.at(-1)?.text ?? '';
    if (system.includes('Some turns are about to leave')) {
      if (rules.fail?.flush) return { kind: 'status', status: rules.fail.flush, message: 'scripted flush failure' };
      const facts = flushTurns(last)
        .filter((t) => t.role === 'person')
        .flatMap((t) => {
          const content = rules.fact?.(t.text);
          return content ? [{ category: 'preference', content, turns: [t.n], confidence: 0.9 }] : [];
        });
      // An assistant statement the system must refuse whatever the model says.
      const agentTurn = flushTurns(last).find((t) => t.role === 'assistant');
      if (agentTurn) facts.push({ category: 'fact', content: 'The assistant loves jazz', turns: [agentTurn.n], confidence: 0.9 });
      return { kind: 'text', text: JSON.stringify({ facts }) };
    }
    if (system.includes('running summary')) {
      if (rules.fail?.summary) return { kind: 'status', status: rules.fail.summary, message: 'scripted summary failure' };
      const turns = (/New turns:\n([\s\S]*)\n\nNew summary:/.exec(last)?.[1] ?? '').split('\n').filter((l) => l.trim() !== '');
      return { kind: 'text', text: `Summary so far: ${turns.length} more turns folded in; the last was "${(turns.at(-1) ?? '').slice(0, 60)}".` };
    }
    if (system.includes('memory of a conversation that just ended') || system.includes('memory sub-agent')) {
      const person = [...last.matchAll(/(?:person|user)[^:\n]*: (.*)/g)].at(-1)?.[1] ?? '';
      return { kind: 'text', text: JSON.stringify({ content: person ? `The user talked about ${person.slice(0, 80)}` : '' }) };
    }
    if (system.includes('memory consolidation system')) {
      const learned = [...last.matchAll(/^(E\d+) \S+ \S+ ([^:\n]+): (.*)$/gm)].flatMap((m) => {
        const content = rules.learn?.(m[3]!, m[2]!);
        return content ? [{ category: 'fact', content, confidence: 0.9, source: 'stated', episodes: [m[1]!] }] : [];
      });
      return { kind: 'text', text: JSON.stringify({ new: learned }) };
    }
    if (rules.fail?.reply) return { kind: 'status', status: rules.fail.reply, message: 'scripted outage' };
    return rules.reply?.(seen) ?? { kind: 'text', text: `ok: ${last.slice(0, 80)}` };
  };
}
