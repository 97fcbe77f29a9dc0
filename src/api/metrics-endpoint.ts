/**
 * GET /metrics: seed 001's monitoring list in the Prometheus text format — memories created,
 * consolidation (and compaction) runs, replies with memories injected, LLM tokens and errors —
 * plus retrieval latency (recorded by the search into the core's registry) and the depth of the
 * pending-embedding queue. Counts kept in the database are read at scrape time, so they survive
 * restarts and include the work of other processes on the same store.
 */
import type { Core } from '../core';

function line(name: string, type: 'gauge' | 'counter', help: string, samples: Array<[labels: string, value: number]>): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples.map(([labels, value]) => `${name}${labels} ${value}`)];
}

export async function renderMetrics(core: Core): Promise<string> {
  const prisma = core.db.prisma;
  const [created, memories, runs, tokens, calls, pending, replies, episodes, compactions] = await Promise.all([
    prisma.auditEvent.count({ where: { action: 'create', subjectType: 'memory' } }),
    prisma.memory.groupBy({ by: ['active'], _count: { _all: true } }),
    prisma.sleepRun.groupBy({ by: ['kind', 'status'], _count: { _all: true } }),
    prisma.llmCall.aggregate({ _sum: { inputTokens: true, outputTokens: true } }),
    prisma.llmCall.groupBy({ by: ['status'], _count: { _all: true } }),
    core.embeddingWorker.pending(),
    prisma.episode.count({ where: { role: 'agent' } }),
    prisma.episode.count(),
    // A compaction cycle is a flush call, then a summary call (src/agent/compaction.ts).
    prisma.llmCall.groupBy({ by: ['purpose', 'status'], where: { purpose: { in: ['compaction-flush', 'compaction-summary'] } }, _count: { _all: true } }),
  ]);
  const injected = await prisma.episode.count({ where: { role: 'agent', metadata: { string_contains: 'injectedMemoryIds' } } }).catch(() => 0);
  const text = [
    ...line('nocturne_memories_created_total', 'counter', 'Memories created (audit events).', [['', created]]),
    ...line('nocturne_memories', 'gauge', 'Memories by state.', memories.map((m) => [`{state="${m.active ? 'active' : 'inactive'}"}`, m._count._all])),
    ...line('nocturne_episodes', 'gauge', 'Episodes stored.', [['', episodes]]),
    ...line('nocturne_sleep_runs_total', 'counter', 'Sleep runs (consolidation, decay, digest, reflection) by status.', runs.map((r) => [`{kind="${r.kind}",status="${r.status}"}`, r._count._all])),
    ...line('nocturne_llm_tokens_total', 'counter', 'Language model tokens.', [['{direction="input"}', tokens._sum.inputTokens ?? 0], ['{direction="output"}', tokens._sum.outputTokens ?? 0]]),
    ...line('nocturne_llm_calls_total', 'counter', 'Language model calls by outcome.', calls.map((c) => [`{status="${c.status}"}`, c._count._all])),
    ...line('nocturne_embedding_queue', 'gauge', 'Episodes and memories waiting for a vector.', [['', pending]]),
    ...line('nocturne_compaction_steps_total', 'counter', 'Context compaction steps of the agent (flush, then summary; a cycle completes with its summary) by outcome.', compactions.map((c) => [`{step="${c.purpose.replace('compaction-', '')}",status="${c.status}"}`, c._count._all])),
    ...line('nocturne_replies_total', 'counter', 'Agent replies, and those with memories injected.', [['{memories="any"}', replies], ['{memories="injected"}', injected]]),
    core.metrics.render(),
  ];
  return `${text.filter((l) => l !== '').join('\n')}\n`;
}
