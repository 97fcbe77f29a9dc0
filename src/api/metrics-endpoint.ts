/**
 * GET /metrics: the monitoring list in the Prometheus text format — memories created,
 * consolidation (and compaction) runs, replies with memories injected, LLM tokens and errors —
 * plus retrieval latency (recorded by the search into the core's registry) and the depth of the
 * pending-embedding queue. Counts kept in the database are read at scrape time, so they survive
 * restarts and include the work of other processes on the same store.
 */
import type { EmbeddingWorker } from '../memory/embeddings/embedding-worker';
import type { Metrics } from '../shared/metrics';
import type { StoreStats } from '../memory/store-stats';

/** What the metrics are read from: the store's counts, the embedding queue, this process's registry. */
export interface MetricsSources {
  readonly storeStats: Pick<StoreStats, 'counts'>;
  readonly embeddingWorker: Pick<EmbeddingWorker, 'pending'>;
  readonly metrics: Pick<Metrics, 'render'>;
}

function line(name: string, type: 'gauge' | 'counter', help: string, samples: Array<[labels: string, value: number]>): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples.map(([labels, value]) => `${name}${labels} ${value}`)];
}

export async function renderMetrics(sources: MetricsSources): Promise<string> {
  const [counts, pending] = await Promise.all([sources.storeStats.counts(), sources.embeddingWorker.pending()]);
  const text = [
    ...line('nocturne_memories_created_total', 'counter', 'Memories created (audit events).', [['', counts.memoriesCreated]]),
    ...line(
      'nocturne_memories',
      'gauge',
      'Memories by state.',
      counts.memoriesByState.map((m) => [`{state="${m.active ? 'active' : 'inactive'}"}`, m.count]),
    ),
    ...line('nocturne_episodes', 'gauge', 'Episodes stored.', [['', counts.episodes]]),
    ...line(
      'nocturne_sleep_runs_total',
      'counter',
      'Sleep runs (consolidation, decay, digest, reflection) by status.',
      counts.sleepRuns.map((r) => [`{kind="${r.kind}",status="${r.status}"}`, r.count]),
    ),
    ...line('nocturne_llm_tokens_total', 'counter', 'Language model tokens.', [
      ['{direction="input"}', counts.llmTokens.input],
      ['{direction="output"}', counts.llmTokens.output],
    ]),
    ...line('nocturne_llm_cache_tokens_total', 'counter', 'Input tokens read from or written to the prompt cache (part of the input tokens).', [
      ['{kind="read"}', counts.llmTokens.cacheRead],
      ['{kind="write"}', counts.llmTokens.cacheWrite],
    ]),
    ...line(
      'nocturne_llm_calls_total',
      'counter',
      'Language model calls by outcome.',
      counts.llmCalls.map((c) => [`{status="${c.status}"}`, c.count]),
    ),
    ...line('nocturne_embedding_queue', 'gauge', 'Episodes and memories waiting for a vector.', [['', pending]]),
    ...line(
      'nocturne_compaction_steps_total',
      'counter',
      'Context compaction steps of the agent (flush, then summary; a cycle completes with its summary) by outcome.',
      counts.compactionSteps.map((c) => [`{step="${c.purpose.replace('compaction-', '')}",status="${c.status}"}`, c.count]),
    ),
    ...line('nocturne_replies_total', 'counter', 'Agent replies, and those with memories injected.', [
      ['{memories="any"}', counts.replies],
      ['{memories="injected"}', counts.repliesWithMemories],
    ]),
    sources.metrics.render(),
  ];
  return `${text.filter((l) => l !== '').join('\n')}\n`;
}
