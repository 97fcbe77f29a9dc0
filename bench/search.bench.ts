/**
 * End-to-end benchmark of ingest and hybrid search on the embedded defaults (SQLite + FTS5,
 * sqlite-vec, the local USE-lite embedder): `npm run bench` runs it after the vector index bench.
 *
 * - Ingest with embedding: 1,500 LoCoMo turns through the episode service and the embedding
 *   worker (USE-lite), episodes per second end to end.
 * - Ingest without embedding: 210,000 episodes (full-text index maintained by triggers).
 * - Search: `search()` exactly as the service runs it (query embedding, full-text and vector
 *   candidates, neighbouring turns, scoring) for 100 LoCoMo questions, p50/p95, in one scope of
 *   10,000 episodes, one of 100,000, and in one of 100 scopes of 1,000; each beside an exact
 *   brute-force search measured in the same run (the same query embedding, then a dot product
 *   with every vector of the scope).
 * - Reply context: `retrieveContext` as the agent calls it for every reply (hybrid search over the
 *   scope's episodes and memories with its query embedding, the recent turns, packing into the
 *   2,000-token default budget), p50/p95 in the same scopes.
 *
 * Embedding 210,000 turns with USE-lite would take about an hour on this machine, so the large
 * scopes reuse the 1,500 real turns: each synthetic episode is a real turn's text with its real
 * vector plus a little noise (cosine ~0.95 to the original), in conversations of 20 turns with
 * their own speakers and dates. Text statistics (posting lists 140x longer than one LoCoMo
 * conversation) and vector statistics are realistic; only the answers are not meaningful.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/load-config';
import { createCore, type Core } from '../src/core';
import { normalizeVector } from '../src/memory/embeddings/embedder';
import { loadLocomo } from '../src/evaluation/locomo';
import type { NewEpisode } from '../src/storage/episode-repository';
import { createSilentLogger } from '../src/shared/logger';
import { seededRandom } from '../src/shared/seeded-random';

const BASE_TURNS = 1_500;
const QUERIES = 100;
/** The reply context's default budget (AGENT_MEMORY_TOKENS). */
const REPLY_CONTEXT_TOKENS = 2_000;
const DATA = process.env.LOCOMO_FILE ?? path.resolve(__dirname, '../../shared/datasets/locomo/locomo-dev.json');

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-bench-'));
  const core: Core = await createCore(loadConfig({ env: { DATA_DIR: dir, LOG_LEVEL: 'error' }, envFile: false }), createSilentLogger());
  const rand = seededRandom(7);
  try {
    const conversations = loadLocomo(DATA);
    const turns = conversations.flatMap((c) => c.episodes).slice(0, BASE_TURNS);
    const questions = conversations
      .flatMap((c) => c.questions.map((q) => q.question))
      .filter((_, i) => i % 7 === 0)
      .slice(0, QUERIES);
    console.log(`search benchmark: ${turns.length} real LoCoMo turns, ${questions.length} LoCoMo questions, data in ${dir}`);

    // ---- ingest with embedding (real turns, USE-lite) ----
    await core.embedder.embed(['warm up']);
    let t0 = performance.now();
    await core.episodeService.ingestMany(
      { key: 'bench:base', channel: 'bench' },
      turns.map((t, i) =>
        core.episodeService.normalize(
          { content: t.content, author: t.author, externalId: `turn-${i}`, timestamp: t.timestamp.toISOString(), conversationId: t.conversationId },
          'bench',
        ),
      ),
    );
    await core.embeddingWorker.drain();
    const withEmbedding = turns.length / ((performance.now() - t0) / 1000);
    const baseScope = (await core.scopes.findByKey('bench:base'))!.id;
    const baseRows = await core.db.prisma.episode.findMany({
      where: { scopeId: baseScope },
      orderBy: { id: 'asc' },
      select: { id: true, content: true, author: true },
    });
    const baseVectors = await core.embedder.embed(baseRows.map((r) => r.content));
    console.log(`ingest with embedding (USE-lite): ${withEmbedding.toFixed(0)} episodes/s`);

    // ---- ingest without embedding: synthetic scopes ----
    const authors = ['Ana', 'Ben', 'Caro', 'Dev', 'Eli', 'Fay', 'Gus', 'Hana', 'Ivo', 'Jun'];
    const vectorsByScope = new Map<string, Float32Array[]>();
    let ingested = 0;
    let ingestMs = 0;
    const build = async (key: string, count: number) => {
      const episodes: NewEpisode[] = [];
      const picks: number[] = [];
      const start = Date.UTC(2024, 0, 1);
      for (let i = 0; i < count; i++) {
        const pick = Math.floor(rand() * baseRows.length);
        picks.push(pick);
        const conversation = Math.floor(i / 20);
        episodes.push(
          core.episodeService.normalize(
            {
              content: baseRows[pick]!.content,
              author: authors[(conversation + (i % 2)) % authors.length],
              externalId: `${key}-${i}`,
              conversationId: `${key}-c${conversation}`,
              timestamp: new Date(start + i * 600_000).toISOString(),
            },
            'bench',
          ),
        );
      }
      const t = performance.now();
      for (let i = 0; i < episodes.length; i += 2_000) await core.episodeService.ingestMany({ key, channel: 'bench' }, episodes.slice(i, i + 2_000));
      ingestMs += performance.now() - t;
      ingested += count;
      const scopeId = (await core.scopes.findByKey(key))!.id;
      const rows = await core.db.prisma.episode.findMany({ where: { scopeId }, select: { id: true, externalId: true } });
      const byExternal = new Map(rows.map((r) => [r.externalId, r.id]));
      const vectors: Float32Array[] = [];
      const records = picks.map((pick, i) => {
        const v = new Float32Array(baseVectors[pick]!);
        for (let d = 0; d < v.length; d++) v[d]! += (rand() - 0.5) * 0.02;
        const vector = normalizeVector(v);
        vectors.push(vector);
        return { id: byExternal.get(`${key}-${i}`)!, kind: 'episode' as const, scopeId, vector };
      });
      for (let i = 0; i < records.length; i += 5_000) await core.vectorIndex.upsert(records.slice(i, i + 5_000));
      await core.db.prisma.episode.updateMany({ where: { scopeId }, data: { embeddedWith: core.embedder.name } });
      vectorsByScope.set(scopeId, vectors);
      return scopeId;
    };
    const scope10k = await build('bench:10k', 10_000);
    const scope100k = await build('bench:100k', 100_000);
    let spreadScope = '';
    for (let s = 0; s < 100; s++) {
      const id = await build(`bench:spread-${s}`, 1_000);
      if (s === 42) spreadScope = id;
    }
    console.log(
      `ingest without embedding (SQLite + FTS5 triggers): ${(ingested / (ingestMs / 1000)).toFixed(0)} episodes/s over ${ingested.toLocaleString('en')} episodes`,
    );

    // ---- search ----
    const rows: string[][] = [['scope', 'hybrid search p50', 'p95', 'reply context p50', 'p95', 'query embedding p50', 'exact brute force p50', 'p95']];
    for (const [label, scopeId] of [
      ['10k in one scope', scope10k],
      ['100k in one scope', scope100k],
      ['1k (one of 100 scopes)', spreadScope],
    ] as const) {
      const vectors = vectorsByScope.get(scopeId)!;
      for (const q of questions.slice(0, 5)) await core.search.search({ scopeId, semanticQuery: q, limit: 10 });
      const hybrid: number[] = [];
      const embed: number[] = [];
      const exact: number[] = [];
      const context: number[] = [];
      for (const q of questions) {
        // The reply's context as the agent asks for it: search of episodes and memories, recent
        // turns, packing into the default budget (query embedding included).
        t0 = performance.now();
        await core.context.retrieveContext({ scopeId, message: q, budgetTokens: REPLY_CONTEXT_TOKENS });
        context.push(performance.now() - t0);

        t0 = performance.now();
        await core.search.search({ scopeId, semanticQuery: q, limit: 10 });
        hybrid.push(performance.now() - t0);

        t0 = performance.now();
        const [query] = await core.embedder.embed([q]);
        const embedded = performance.now();
        embed.push(embedded - t0);
        const top: Array<{ i: number; s: number }> = [];
        for (let i = 0; i < vectors.length; i++) {
          const v = vectors[i]!;
          let s = 0;
          for (let d = 0; d < v.length; d++) s += v[d]! * query![d]!;
          if (top.length < 10 || s > top[top.length - 1]!.s) {
            top.push({ i, s });
            top.sort((a, b) => b.s - a.s);
            if (top.length > 10) top.pop();
          }
        }
        exact.push(performance.now() - t0);
      }
      rows.push([
        label,
        ms(percentile(hybrid, 50)),
        ms(percentile(hybrid, 95)),
        ms(percentile(context, 50)),
        ms(percentile(context, 95)),
        ms(percentile(embed, 50)),
        ms(percentile(exact, 50)),
        ms(percentile(exact, 95)),
      ]);
    }
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c]!)).join('  '));
    console.log(`RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (210k episodes, ${(1_500 + 210_000).toLocaleString('en')} vectors)`);
  } finally {
    await core.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
