/**
 * Chooses the Embedder adapter the configuration asks for. The composition root calls this
 * once; everything else depends on the {@link Embedder} port only.
 */
import type { Config } from '../../config/load-config';
import type { Logger } from '../../shared/logger';
import type { Embedder } from '../../memory/embeddings/embedder';
import { createLocalEmbedder } from './local-embedder';
import { createOllamaEmbedder } from './ollama-embedder';

export type EmbedderConfig = Config['embedder'];

export interface EmbedderDeps {
  readonly logger: Logger;
  /** Limit for one call to a remote embedder (the local model has no network to wait for). */
  readonly timeoutMs?: number;
}

/** Vector sizes of common Ollama embedding models (their default tags), so the index can be created before the first call. */
export const OLLAMA_MODEL_DIMENSIONS: Readonly<Record<string, number>> = {
  'nomic-embed-text': 768,
  'mxbai-embed-large': 1024,
  'all-minilm': 384,
  'bge-m3': 1024,
  'bge-large': 1024,
  'snowflake-arctic-embed2': 1024,
  'paraphrase-multilingual': 768,
  embeddinggemma: 768,
};

/** The size Ollama's default (or `:latest`) tag of `model` returns; unknown models are assumed to be 768 and checked on the first call. */
export function ollamaModelDimension(model: string): number {
  const bare = model.endsWith(':latest') ? model.slice(0, -':latest'.length) : model;
  return OLLAMA_MODEL_DIMENSIONS[bare] ?? 768;
}

/**
 * One factory per configured kind. `satisfies` makes adding a kind to the config schema a
 * compile error here until it has an adapter, without widening the factories' types.
 */
const embedders = {
  local: (_config: EmbedderConfig, deps: EmbedderDeps) => createLocalEmbedder({ logger: deps.logger }),
  ollama: (config: EmbedderConfig, deps: EmbedderDeps) =>
    createOllamaEmbedder({
      host: config.ollamaHost,
      model: config.model,
      dimension: config.dimension ?? ollamaModelDimension(config.model),
      timeoutMs: deps.timeoutMs,
      logger: deps.logger,
    }),
} satisfies Record<EmbedderConfig['kind'], (config: EmbedderConfig, deps: EmbedderDeps) => Embedder>;

/** Creates the configured embedder; no model is loaded and no connection made until the first `embed`. */
export function createEmbedder(config: EmbedderConfig, deps: EmbedderDeps): Embedder {
  return embedders[config.kind](config, deps);
}
