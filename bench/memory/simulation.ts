/**
 * The memory hygiene simulation: the composed service (src/service.ts, the wiring `npm start`
 * runs) on a real SQLite store, its model the misbehaving loopback model, its clock simulated.
 *
 * Messages enter through the webhook channel over HTTP, signed, with the simulated timestamp:
 * the webhook is the one channel the service exposes that carries a message's time on the wire,
 * so every step a real message takes (HTTP, validation, scope, agent, retrieval, reply prompt,
 * episodes) runs. Before each message the clock moves to its time. Each simulated night at 03:00
 * UTC the jobs of the sleep scheduler run: its consolidation tick (idle scopes with enough
 * unconsolidated episodes; dreaming and the soul follow inside), its decay tick, then each
 * scope's digest job (called directly: the scheduler's digest tick serves only scopes with an
 * owner, which webhook scopes have not).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { signRequest } from '../../src/channels/webhook/signature';
import { resolveReplyBudget } from '../../src/agent/token-budget';
import { loadConfig } from '../../src/config/load-config';
import type { Embedder } from '../../src/memory/embeddings/embedder';
import { startService, type RunningService } from '../../src/service';
import { uuidv7 } from '../../src/shared/ids';
import { createSilentLogger } from '../../src/shared/logger';
import { startAnthropicDouble, type AnthropicDouble } from '../../test/doubles/anthropic-server';
import { isDailyTalker, schedule, type Conversation } from './messages';
import { createMisbehavingModel, type Misbehaviour, type MisbehavingModel } from './misbehaving-model';
import { createPeople, type Person } from './people';

export const SIMULATION_START = new Date('2026-01-05T00:00:00Z');
/** Memory sources read per query when measuring the lag (a parameter per cited episode). */
const SOURCE_PAGE = 500;
const WEBHOOK_SECRET = 'memory-bench-webhook-secret';
const SOURCE = 'bench';
const NIGHT_HOUR_UTC = 3;
const DAY_MS = 86_400_000;
/** The model window the reply budget is measured for. */
export const REPLY_WINDOW = 8_192;

export interface SimulationOptions {
  readonly people: number;
  readonly days: number;
  readonly seed: number;
  readonly rates?: Partial<Misbehaviour>;
  /** Settings of the service beyond the bench's own (e.g. SLEEP_MAX_WAIT_HOURS), as environment variables. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The pipeline's embedder: `'configured'` (the default) is what `npm start` uses (the local
   * USE-lite model); an {@link Embedder} replaces it (tests use the hash embedder: faster, but
   * blind to paraphrase, so restatements in other words are not recognized).
   */
  readonly embedder?: Embedder | 'configured';
  /**
   * The model server refuses answer schemas (a model without structured outputs): structured
   * answers are then asked for in the prompt and repaired when they come back wrong.
   */
  readonly refuseSchemas?: boolean;
  readonly log?: (line: string) => void;
  /** Record what happened to each message cited later than the night after it ({@link LagFigures.late}). */
  readonly traceLate?: boolean;
}

export interface Simulation {
  readonly service: RunningService;
  readonly model: MisbehavingModel;
  readonly people: readonly Person[];
  readonly conversations: readonly Conversation[];
  readonly messages: number;
  /** Replies that were not normal ones (the reply text said the service failed). */
  readonly failedReplies: number;
  readonly seconds: number;
  /** The reply budget of the window the agent was configured for: window less the answer reserve. */
  readonly replyLimit: number;
  /** What the consolidation schedule cost and how long it made people wait: {@link LagFigures}. */
  readonly lag: LagFigures;
  /** Questions about what a person said 1-20 days before, and whether the reply's prompt held the answer. */
  readonly questions: readonly { readonly key: string; readonly daysAgo: number; readonly held: boolean }[];
  stop(): Promise<void>;
}

/**
 * The schedule's figures, read night by night: after each night's consolidation tick, every
 * message of a person newly cited by a memory adds its wait (the night's time less the message's);
 * every (person, night) with a consolidation run adds the memory-work model calls of that night.
 */
export interface LagFigures {
  /** Hours from a person's message to the night a memory first cited it, people who talk on most days. */
  readonly dailyTalkerHours: readonly number[];
  /** The same for everyone. */
  readonly allHours: readonly number[];
  /** (person, night) pairs with a consolidation run. */
  readonly personNights: number;
  /** Model calls of the memory work (all but replies) made during the nights. */
  readonly nightCalls: number;
  /** Messages first cited on a later night than the one after they were said: what happened to each. */
  readonly late: readonly LateCitation[];
}

/** A message first cited after the night that followed it, with what the first night did. */
export interface LateCitation {
  readonly person: string;
  readonly dailyTalker: boolean;
  readonly text: string;
  readonly saidAt: Date;
  /** Nights (0 the one after the message) until a memory cited it. */
  readonly nightsLate: number;
  readonly hours: number;
  /** The scope's consolidation on the first night: the tick's status and detail. */
  readonly firstNight: string;
  /** What that night's run refused (its SleepRun stats). */
  readonly firstNightRejected: readonly string[];
  readonly consolidatedAt: Date | null;
  readonly attempts: number;
  /** The memory that cited it: content and the audit actions of that night. */
  readonly citedBy: string;
}

/**
 * The hash embedder (tests) gives text without words ("...", a placeholder the model wrote) an all-zero
 * vector, which the vector index refuses, and the embedding worker then fails on that row every
 * time. USE-lite, the embedder in use, always gives a direction; so does this wrapper (such text
 * gets the vector of a fixed marker), so the simulation measures the pipeline, not the double.
 */
function withDirection(embedder: Embedder): Embedder {
  return {
    name: embedder.name,
    dimension: embedder.dimension,
    async embed(texts) {
      const vectors = await embedder.embed(texts);
      const zero = vectors.findIndex((v) => v.every((x) => x === 0));
      if (zero === -1) return vectors;
      const [marker] = await embedder.embed(['text without words']);
      return vectors.map((v) => (v.every((x) => x === 0) ? marker! : v));
    },
    close: () => embedder.close(),
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * POSTs one message. A connection reset is retried (three times): the client may reuse a
 * keep-alive connection the server is closing after a long night without messages. The retry
 * is safe: each attempt is signed anew (a signature is accepted once), the message carries its
 * external id, and the service answers a message it already stored with an empty reply, without
 * storing it twice.
 */
async function post(url: string, body: Record<string, unknown>): Promise<string> {
  const raw = JSON.stringify(body);
  let response: Response;
  for (let attempt = 1; ; attempt++) {
    try {
      const headers = { 'content-type': 'application/json', ...signRequest({ secret: WEBHOOK_SECRET, method: 'POST', path: `/webhook/${SOURCE}`, body: raw }) };
      response = await fetch(`${url}/webhook/${SOURCE}`, { method: 'POST', headers, body: raw });
      break;
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (attempt >= 3 || (code !== 'ECONNRESET' && code !== 'UND_ERR_SOCKET')) throw error;
    }
  }
  const answer = (await response.json()) as { reply?: string; error?: string };
  if (!response.ok) throw new Error(`webhook answered ${response.status}: ${answer.error ?? raw}`);
  return answer.reply ?? '';
}

/** Runs the whole simulation; the caller reads the store, then calls `stop()`. */
export async function runSimulation(options: SimulationOptions): Promise<Simulation> {
  const log = options.log ?? (() => undefined);
  const started = performance.now();
  const model = createMisbehavingModel({ seed: options.seed, rates: options.rates });
  const double: AnthropicDouble = await startAnthropicDouble({ responder: model.responder, refuseSchemas: options.refuseSchemas ?? false });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-memory-bench-'));
  let now = SIMULATION_START;
  let service: RunningService | undefined;
  const stop = async () => {
    await service?.stop();
    await double.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const config = loadConfig({
      env: {
        DATA_DIR: dir,
        LOG_LEVEL: 'error',
        LLM_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'bench-key-0000000000',
        ANTHROPIC_BASE_URL: double.url,
        WEBHOOK_SECRET,
        WEBHOOK_PORT: String(await freePort()),
        SLEEP_ENABLED: 'false',
        TERMINAL: 'off',
        TZ: 'UTC',
        // The reply budget of an 8k window, which the benchmark measures prompts against.
        AGENT_CONTEXT_TOKENS: String(REPLY_WINDOW),
        ...options.env,
      },
      envFile: false,
    });
    service = await startService(
      config,
      createSilentLogger(),
      { input: process.stdin, output: process.stdout },
      {
        ...(options.embedder && options.embedder !== 'configured' && { embedder: withDirection(options.embedder) }),
        clock: () => now,
      },
    );
    const url = `http://127.0.0.1:${config.webhook!.port}`;
    const people = createPeople({ count: options.people, days: options.days, seed: options.seed, start: SIMULATION_START });
    const conversations = schedule(people, { days: options.days, start: SIMULATION_START, seed: options.seed });
    const core = service.core;
    const prisma = core.db.prisma;
    const dailyTalkers = new Set(people.filter((_, i) => isDailyTalker(i)).map((p) => p.id));
    const questions: { key: string; daysAgo: number; held: boolean }[] = [];
    const cited = new Set<string>();
    const lag = { dailyTalkerHours: [] as number[], allHours: [] as number[], personNights: 0, nightCalls: 0, late: [] as LateCitation[] };
    /** Each night's consolidation report, by scope id, for the late citations' trace. */
    const nights: Map<string, { status: string; detail?: string; runId?: string }>[] = [];
    let messages = 0;
    let failedReplies = 0;
    let next = 0;
    const phase = { messagesMs: 0, nightsMs: 0 };
    let mark = performance.now();
    const lap = (key: keyof typeof phase) => {
      const t = performance.now();
      phase[key] += t - mark;
      mark = t;
    };
    for (let day = 0; day < options.days; day++) {
      for (; next < conversations.length && conversations[next]!.day === day; next++) {
        const conversation = conversations[next]!;
        for (const [i, message] of conversation.messages.entries()) {
          now = message.at;
          // Every earlier row has its vector before the next turn retrieves: the same run gives
          // the same prompts whatever the background worker's timing.
          await core.embeddingWorker.drain();
          model.captured.capturing = message.asks !== undefined;
          model.captured.replies.length = 0;
          const reply = await post(url, {
            user: conversation.person.id,
            name: conversation.person.name,
            text: message.text,
            timestamp: message.at.toISOString(),
            messageId: `${conversation.person.id}-${day}-${i}`,
          });
          model.captured.capturing = false;
          if (message.asks) {
            // The first reply request of the turn is the prompt the context retriever built.
            const prompt = (model.captured.replies[0] ?? '').toLowerCase();
            questions.push({ key: message.asks.key, daysAgo: day - message.asks.saidDay, held: prompt.includes(message.asks.value.toLowerCase()) });
          }
          messages++;
          if (/went wrong|can't think right now|could not read/i.test(reply)) failedReplies++;
        }
      }
      lap('messagesMs');
      now = new Date(SIMULATION_START.getTime() + (day + 1) * DAY_MS + NIGHT_HOUR_UTC * 3_600_000);
      await core.embeddingWorker.drain();
      const callsBefore = model.calls.filter((c) => c.purpose !== 'reply').length;
      const consolidation = await core.scheduler.runConsolidation(now);
      await core.scheduler.runDecay(now);
      for (const scope of await core.db.prisma.scope.findMany({ select: { id: true } })) {
        const runId = uuidv7(now.getTime());
        await core.sleep.digest(scope.id, { now, runId, periodEnd: now, shouldContinue: () => true, tokenBudgetLeft: Number.POSITIVE_INFINITY });
      }
      lag.nightCalls += model.calls.filter((c) => c.purpose !== 'reply').length - callsBefore;
      lag.personNights += consolidation.scopes.filter((r) => r.status !== 'not-due' && r.status !== 'busy').length;
      nights.push(new Map(consolidation.scopes.map((r) => [r.scopeId, { status: r.status, detail: r.detail, runId: r.runId }])));
      // In pages: one query for all of them reads the cited episodes with one parameter each, past
      // SQLite's limit once 20 people have talked for a month.
      const sources = [];
      for (let skip = 0; ; skip += SOURCE_PAGE) {
        const page = await prisma.memorySource.findMany({
          where: { episode: { role: 'user' } },
          orderBy: [{ memoryId: 'asc' }, { episodeId: 'asc' }],
          skip,
          take: SOURCE_PAGE,
          select: {
            episodeId: true,
            memoryId: true,
            episode: {
              select: { timestamp: true, scopeId: true, content: true, consolidatedAt: true, consolidationAttempts: true, scope: { select: { key: true } } },
            },
          },
        });
        sources.push(...page);
        if (page.length < SOURCE_PAGE) break;
      }
      for (const source of sources) {
        if (cited.has(source.episodeId)) continue;
        cited.add(source.episodeId);
        const hours = (now.getTime() - source.episode.timestamp.getTime()) / 3_600_000;
        lag.allHours.push(hours);
        const person = source.episode.scope.key.split(':').at(-1) ?? '';
        if (dailyTalkers.has(person)) lag.dailyTalkerHours.push(hours);
        const saidNight = Math.floor((source.episode.timestamp.getTime() - SIMULATION_START.getTime() - NIGHT_HOUR_UTC * 3_600_000) / DAY_MS);
        if (options.traceLate && day > saidNight) {
          const first = nights[saidNight]?.get(source.episode.scopeId);
          const run = first?.runId ? await prisma.sleepRun.findUnique({ where: { id: first.runId }, select: { stats: true } }) : null;
          const memory = await prisma.memory.findUnique({ where: { id: source.memoryId }, select: { content: true, createdAt: true } });
          const events = await prisma.auditEvent.findMany({ where: { subjectId: source.memoryId, createdAt: now }, select: { action: true, reason: true } });
          lag.late.push({
            person,
            dailyTalker: dailyTalkers.has(person),
            text: source.episode.content,
            saidAt: source.episode.timestamp,
            nightsLate: day - saidNight,
            hours,
            firstNight: first ? `${first.status}${first.detail ? `: ${first.detail}` : ''}` : 'no report',
            firstNightRejected: (run?.stats as { rejected?: string[] } | null)?.rejected ?? [],
            consolidatedAt: source.episode.consolidatedAt,
            attempts: source.episode.consolidationAttempts,
            citedBy: `"${memory?.content ?? '?'}" (created ${memory?.createdAt.toISOString() ?? '?'}; ${events.map((e) => `${e.action}: ${e.reason ?? ''}`).join('; ')})`,
          });
        }
      }
      lap('nightsMs');
      if ((day + 1) % 30 === 0 || day === options.days - 1) {
        const ran = consolidation.scopes.filter((s) => s.status !== 'not-due').length;
        const seconds = (ms: number) => (ms / 1000).toFixed(0);
        log(
          `  day ${day + 1}/${options.days}: ${messages} messages, ${model.calls.length} model calls, ` +
            `last night consolidated ${ran} scope(s); ${seconds(phase.messagesMs)} s on messages, ${seconds(phase.nightsMs)} s on nights`,
        );
      }
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      service,
      model,
      people,
      conversations,
      messages,
      failedReplies,
      seconds,
      lag,
      questions,
      replyLimit: REPLY_WINDOW - resolveReplyBudget(config.agent, REPLY_WINDOW).answerTokens,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
