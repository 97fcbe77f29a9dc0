/**
 * Chooses the LanguageModel adapter the configuration asks for. The composition root calls this
 * once (and wraps the result with `withUsageRecording`); everything else depends on the port.
 */
import { ConfigError, type Config } from '../config/load-config';
import { createSilentLogger, type Logger } from '../shared/logger';
import { createAnthropicModel } from './anthropic-model';
import type { LanguageModel, LlmProvider } from './language-model';
import { createOllamaModel } from './ollama-model';
import type { RetryPolicy } from './retry';

export type LlmConfig = Config['llm'];

export interface LanguageModelDeps {
  readonly logger?: Logger;
  /** Overrides of the retry policy (the timeout comes from the config unless given here). */
  readonly retry?: Partial<RetryPolicy>;
  readonly fetch?: typeof fetch;
}

/** Default model per provider (as documented for LLM_MODEL in the config schema). */
export const DEFAULT_MODELS: Readonly<Record<LlmProvider, string>> = {
  anthropic: 'claude-sonnet-4-6',
  ollama: 'llama3.2',
};

/**
 * Context windows we set for Ollama model families (sent as `num_ctx`). Conservative on
 * purpose: Ollama reserves memory for the whole window, and the models run on small machines.
 */
export const OLLAMA_CONTEXT_WINDOWS: Readonly<Record<string, number>> = {
  llama2: 4096,
  llama3: 8192,
  gemma2: 8192,
  mistral: 32_768,
  'mistral-nemo': 32_768,
  qwen2: 32_768,
  'qwen2.5': 32_768,
  qwen3: 32_768,
};

const OLLAMA_DEFAULT_CONTEXT = 8192;
const CLAUDE_CONTEXT = 200_000;

/** The context window budgeted for `model`: 200k for Claude, the table above (by family, tag ignored) or 8192 for Ollama. */
export function contextWindowFor(provider: LlmProvider, model: string): number {
  if (provider === 'anthropic') return CLAUDE_CONTEXT;
  const family = model.split(':')[0]!;
  return OLLAMA_CONTEXT_WINDOWS[family] ?? OLLAMA_DEFAULT_CONTEXT;
}

/**
 * One factory per provider; `satisfies` makes a new provider in the config schema a compile
 * error here until it has an adapter.
 */
const adapters = {
  anthropic: (config: LlmConfig, model: string, deps: LanguageModelDeps) => {
    if (!config.anthropicApiKey) {
      throw new ConfigError([{ setting: 'ANTHROPIC_API_KEY', problem: 'is required when LLM_PROVIDER=anthropic' }]);
    }
    return createAnthropicModel({
      apiKey: config.anthropicApiKey,
      model,
      baseUrl: config.anthropicBaseUrl,
      contextWindow: contextWindowFor('anthropic', model),
      retry: { timeoutMs: config.timeoutMs, ...deps.retry },
      logger: deps.logger,
      fetch: deps.fetch,
    });
  },
  ollama: (config: LlmConfig, model: string, deps: LanguageModelDeps) =>
    createOllamaModel({
      host: config.ollamaHost,
      model,
      contextWindow: contextWindowFor('ollama', model),
      retry: { timeoutMs: config.timeoutMs, ...deps.retry },
      logger: deps.logger,
      fetch: deps.fetch,
    }),
} satisfies Record<LlmProvider, (config: LlmConfig, model: string, deps: LanguageModelDeps) => LanguageModel>;

/** Creates the configured model; no connection is made until the first call. */
export function createLanguageModel(config: LlmConfig, deps: LanguageModelDeps = {}): LanguageModel {
  const model = config.model.trim() || DEFAULT_MODELS[config.provider];
  return adapters[config.provider](config, model, { ...deps, logger: deps.logger ?? createSilentLogger() });
}
