/**
 * Cost of consolidation: model calls and input tokens per 100 consolidated episodes (goal: at
 * most 2 calls and 400 input tokens per episode), measured on real conversation text.
 *
 * 600 LoCoMo turns (six sessions' worth) are ingested into one scope and consolidated the way the
 * service does it, through the real Anthropic SDK against a loopback Messages API that answers
 * like a consolidation model would (a new memory for every fifth turn of the person, a
 * reinforcement for a memory it was shown). Input tokens are counted on the wire: the whole
 * request body (system prompt, memories, episodes, JSON framing) at 4 characters a token.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/load-config';
import { createCore } from '../src/core';
import { createHashEmbedder } from '../src/vectors/embedders/hash-embedder';
import { loadLocomo } from '../src/evaluation/locomo';
import { uuidv7 } from '../src/shared/ids';
import { createSilentLogger } from '../src/shared/logger';
import { startAnthropicDouble } from '../test/doubles/anthropic-server';

const TURNS = 600;
const DATA = process.env.LOCOMO_FILE ?? path.resolve(__dirname, '../../shared/datasets/locomo/locomo-dev.json');

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-sleep-bench-'));
  let bodyTokens = 0;
  const llm = await startAnthropicDouble({
    responder: (seen) => {
      bodyTokens += Math.ceil(JSON.stringify(seen.body).length / 4);
      const prompt = seen.messages.at(-1)?.text ?? '';
      const episodes = [...prompt.matchAll(/^(E\d+) \S+ \S+ user[^:]*: (.*)$/gm)].map((m) => ({ n: m[1]!, text: m[2]! }));
      const memories = [...prompt.matchAll(/^(M\d+) \[/gm)].map((m) => m[1]!);
      const answer = {
        new: episodes
          .filter((_, i) => i % 5 === 0)
          .map((e) => ({ category: 'fact', content: `The user said: ${e.text.slice(0, 80)}`, confidence: 0.8, source: 'stated', episodes: [e.n] })),
        reinforce: memories.slice(0, 1).map((m) => ({ memory: m, episodes: [episodes[0]?.n ?? 'E1'], reason: 'mentioned again' })),
        importance: episodes.map((e) => ({ episode: e.n, score: 0.4 })),
      };
      return { kind: 'text', text: JSON.stringify(answer), outputTokens: Math.ceil(JSON.stringify(answer).length / 4) };
    },
  });
  const config = loadConfig({
    env: { DATA_DIR: dir, LOG_LEVEL: 'error', LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'bench-key-0000000000', ANTHROPIC_BASE_URL: llm.url },
    envFile: false,
  });
  const core = await createCore(config, createSilentLogger(), { embedder: createHashEmbedder({ dimension: 256 }) });
  try {
    const turns = loadLocomo(DATA)
      .flatMap((c) => c.episodes)
      .slice(0, TURNS);
    const speaker = turns[0]!.author;
    const ingest = await core.episodeService.ingestMany(
      { key: 'bench:sleep', channel: 'bench' },
      turns.map((t, i) =>
        core.episodeService.normalize(
          {
            content: t.content,
            author: t.author,
            role: t.author === speaker ? 'user' : 'agent',
            externalId: `turn-${i}`,
            timestamp: t.timestamp.toISOString(),
            conversationId: t.conversationId,
          },
          'bench',
        ),
      ),
    );
    const scopeId = (await core.scopes.findByKey('bench:sleep'))!.id;
    console.log(`ingested ${ingest.inserted} episodes (${ingest.duplicates} duplicates)`);
    const t0 = performance.now();
    const report = await core.sleep.consolidateScope(scopeId, {
      now: new Date(),
      runId: uuidv7(),
      shouldContinue: () => true,
      tokenBudgetLeft: Number.POSITIVE_INFINITY,
    });
    const seconds = (performance.now() - t0) / 1000;
    const consolidationCalls = llm.requests.filter((r) => r.system?.includes('memory consolidation system')).length;
    const per100 = (n: number) => (n / report.episodes) * 100;
    console.log(`sleep benchmark: ${report.episodes} episodes consolidated in ${report.batches} batch(es), ${seconds.toFixed(1)} s (loopback model)`);
    console.log(
      `  model calls per 100 episodes: ${per100(consolidationCalls).toFixed(2)} consolidation, ${per100(report.llmCalls).toFixed(2)} in all (goal <= 2)`,
    );
    console.log(`  input tokens per episode: ${(bodyTokens / report.episodes).toFixed(0)} (whole request bodies, 4 characters a token; goal <= 400)`);
    console.log(`  outcome: ${report.outcome.status}${report.outcome.detail ? ` (${report.outcome.detail})` : ''}`);
    console.log(`  memories created ${report.counts.created ?? 0}, reinforced ${report.counts.reinforced ?? 0}, rejected operations ${report.rejected.length}`);
  } finally {
    await core.close();
    await llm.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
