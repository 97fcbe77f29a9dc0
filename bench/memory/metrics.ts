/**
 * The figures of the memory hygiene benchmark, read from the store at the end and from the wire
 * of the loopback model:
 *
 * - near-duplicates: pairs of active memories of one scope whose vectors under the measuring
 *   embedder (USE-lite in the bench) have cosine >= {@link NEAR_DUPLICATE_COSINE}, as a % of
 *   active memories;
 * - junk: active memories with no evidence from the person (no source episode of role `user`),
 *   about the assistant (content starting with assistant / agent / I / the bot), or placeholders;
 * - the soul's size in tokens (characters / 4), p95 over scopes;
 * - reply prompts over the budget of an 8k window, measured on the wire;
 * - model calls and input tokens (body characters / 4) per stored episode spent on the memory:
 *   everything but the replies (consolidation, with reflection riding on it, entities, conversation ends). The
 *   replies are the conversation itself, one call per message whatever the memory does; they
 *   are reported beside, all purposes together;
 * - active memories per 1,000 episodes.
 */
import { dot, type Embedder } from '../../src/memory/embeddings/embedder';
import type { PrismaClient } from '../../src/storage/prisma';
import type { WireCall } from './misbehaving-model';

export const NEAR_DUPLICATE_COSINE = 0.9;
/** Characters per token, for every size on this benchmark. */
export const CHARS_PER_TOKEN = 4;
/** The reply budget of an 8k window: the window less the answer reservation (token-budget.ts). */
export const WINDOW_TOKENS = 8_192;

/**
 * The goals. Cost is judged per person-night (a consolidation run reads whatever a night has, so
 * one call per person per night is the floor of a schedule that learns within a day), not per
 * episode: calls per episode rewarded batches that made people wait weeks.
 */
export const GOALS = {
  nearDuplicatePct: 2,
  junkPct: 2,
  soulTokensP95: 1_500,
  promptOverBudgetPct: 0,
  inputTokensPerEpisode: 400,
  consolidationLagHoursP95: 24,
  consolidationCallsPerPersonNight: 1.2,
  recentFactRecallPct: 95,
} as const;

const PLACEHOLDER = /^(\.{2,}|…|<[^>]*>|n\/a|tbd|todo|fact|content|unknown)$/i;
const ABOUT_ASSISTANT = /^(the\s+)?(assistant|agent|bot)\b|^I\b/i;

export type JunkReason = 'no-user-evidence' | 'about-assistant' | 'placeholder';

/** Why a memory is junk, or null. */
export function junkReason(memory: { content: string; sourceRoles: readonly string[] }): JunkReason | null {
  const content = memory.content.trim();
  if (PLACEHOLDER.test(content) || content.includes('<fact>')) return 'placeholder';
  if (ABOUT_ASSISTANT.test(content)) return 'about-assistant';
  if (!memory.sourceRoles.includes('user')) return 'no-user-evidence';
  return null;
}

/** Nearest-rank percentile of `values` (0 for none). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export interface StoreFigures {
  readonly scopes: number;
  readonly episodes: number;
  readonly activeMemories: number;
  readonly nearDuplicatePairs: number;
  /** Active memories in at least one near-duplicate pair (a cluster of k counts k, not k(k-1)/2). */
  readonly duplicatedMemories: number;
  /** Active memories written when a conversation ended (the agent's end memory), not by sleep. */
  readonly fromConversationEnds: number;
  readonly junk: Readonly<Record<JunkReason, number>>;
  readonly junkTotal: number;
  readonly soulTokens: readonly number[];
  /** A few examples of each finding, for the report. */
  readonly examples: { readonly duplicates: readonly string[]; readonly junk: readonly string[] };
}

/** Reads the store: active memories per scope, their sources, the souls. */
export async function measureStore(prisma: PrismaClient, embedder: Embedder): Promise<StoreFigures> {
  const scopes = await prisma.scope.findMany({ select: { id: true } });
  const episodes = await prisma.episode.count();
  const junk: Record<JunkReason, number> = { 'no-user-evidence': 0, 'about-assistant': 0, placeholder: 0 };
  const examples = { duplicates: [] as string[], junk: [] as string[] };
  let activeMemories = 0;
  let nearDuplicatePairs = 0;
  let duplicatedMemories = 0;
  const endEvents = await prisma.auditEvent.findMany({
    where: { action: 'create', runId: { startsWith: 'conversation-end:' } },
    select: { subjectId: true },
  });
  const endCreated = new Set(endEvents.map((e) => e.subjectId));
  let fromConversationEnds = 0;
  for (const scope of scopes) {
    const memories = await prisma.memory.findMany({
      where: { scopeId: scope.id, active: true, validTo: null },
      select: { id: true, content: true, sources: { select: { episode: { select: { role: true } } } } },
      orderBy: { createdAt: 'asc' },
    });
    activeMemories += memories.length;
    fromConversationEnds += memories.filter((m) => endCreated.has(m.id)).length;
    for (const m of memories) {
      const reason = junkReason({ content: m.content, sourceRoles: m.sources.map((s) => s.episode.role) });
      if (!reason) continue;
      junk[reason]++;
      if (examples.junk.length < 6) examples.junk.push(`${reason}: ${m.content.slice(0, 80)}`);
    }
    const vectors = memories.length > 1 ? await embedder.embed(memories.map((m) => m.content)) : [];
    const duplicated = new Set<number>();
    for (let i = 0; i < vectors.length; i++) {
      for (let j = i + 1; j < vectors.length; j++) {
        if (dot(vectors[i]!, vectors[j]!) < NEAR_DUPLICATE_COSINE) continue;
        nearDuplicatePairs++;
        duplicated.add(i).add(j);
        const example = `"${memories[i]!.content}" ~ "${memories[j]!.content}"`;
        if (examples.duplicates.length < 6 && !examples.duplicates.includes(example)) examples.duplicates.push(example);
      }
    }
    duplicatedMemories += duplicated.size;
  }
  const profiles = await prisma.profile.findMany({ select: { soul: true } });
  return {
    scopes: scopes.length,
    episodes,
    activeMemories,
    nearDuplicatePairs,
    duplicatedMemories,
    fromConversationEnds,
    junk,
    junkTotal: Object.values(junk).reduce((a, b) => a + b, 0),
    soulTokens: profiles.map((p) => Math.ceil(p.soul.length / CHARS_PER_TOKEN)),
    examples,
  };
}

export interface WireFigures {
  readonly calls: number;
  readonly inputTokens: number;
  readonly byPurpose: Readonly<Record<string, { calls: number; inputTokens: number }>>;
  readonly replyPrompts: number;
  readonly replyOverBudget: number;
  readonly replyTokensP95: number;
  readonly replyTokensMax: number;
  /** Repair calls: a structured answer sent back to the model with what was wrong with it. */
  readonly repairs: number;
}

/** The model's side: calls and tokens by purpose; reply prompts against `replyLimit` tokens. */
export function measureWire(calls: readonly WireCall[], replyLimit: number): WireFigures {
  const byPurpose: Record<string, { calls: number; inputTokens: number }> = {};
  for (const c of calls) {
    const slot = (byPurpose[c.purpose] ??= { calls: 0, inputTokens: 0 });
    slot.calls++;
    slot.inputTokens += c.tokens;
  }
  const replies = calls.filter((c) => c.purpose === 'reply').map((c) => c.tokens);
  return {
    calls: calls.length,
    inputTokens: calls.reduce((s, c) => s + c.tokens, 0),
    byPurpose,
    replyPrompts: replies.length,
    replyOverBudget: replies.filter((t) => t > replyLimit).length,
    replyTokensP95: percentile(replies, 95),
    replyTokensMax: replies.length > 0 ? Math.max(...replies) : 0,
    repairs: calls.filter((c) => c.repair).length,
  };
}

/** The schedule's figures from the simulation (simulation.ts, LagFigures and questions). */
export interface ScheduleInput {
  readonly dailyTalkerHours: readonly number[];
  readonly personNights: number;
  readonly nightCalls: number;
  readonly questions: readonly { readonly held: boolean }[];
}

export interface HygieneSummary {
  readonly nearDuplicatePct: number;
  readonly junkPct: number;
  readonly soulTokensP95: number;
  readonly promptOverBudgetPct: number;
  /** Model calls of the memory work (all but replies) per episode. */
  readonly llmCallsPerEpisode: number;
  /** Input tokens of the memory work per episode. */
  readonly inputTokensPerEpisode: number;
  readonly activeMemoriesPer1000Episodes: number;
  /** The same two costs with the reply calls (one per message). */
  readonly allPurposesCallsPerEpisode: number;
  readonly allPurposesInputTokensPerEpisode: number;
  /** Active memories with at least one near-duplicate, % of active (readable beside the pair count). */
  readonly memoriesWithDuplicatePct: number;
  /** Repair calls (structured answers sent back with their problem) per 1,000 episodes. */
  readonly repairCallsPer1000Episodes: number;
  /** p95 hours from a person's message to the night a memory cited it, people who talk on most days. */
  readonly consolidationLagHoursP95?: number;
  /** Memory-work calls of the nights per (person, night) with a consolidation run. */
  readonly consolidationCallsPerPersonNight?: number;
  /** Questions about facts said 1-20 days before whose reply prompt held the fact, %. */
  readonly recentFactRecallPct?: number;
}

const round = (n: number, digits = 2) => Number(n.toFixed(digits));

export function summarize(store: StoreFigures, wire: WireFigures, schedule?: ScheduleInput): HygieneSummary {
  const perMemory = (n: number) => (store.activeMemories === 0 ? 0 : (n / store.activeMemories) * 100);
  const perEpisode = (n: number) => (store.episodes === 0 ? 0 : n / store.episodes);
  const reply = wire.byPurpose.reply ?? { calls: 0, inputTokens: 0 };
  return {
    nearDuplicatePct: round(perMemory(store.nearDuplicatePairs)),
    junkPct: round(perMemory(store.junkTotal)),
    soulTokensP95: percentile(store.soulTokens, 95),
    promptOverBudgetPct: round(wire.replyPrompts === 0 ? 0 : (wire.replyOverBudget / wire.replyPrompts) * 100),
    llmCallsPerEpisode: round(perEpisode(wire.calls - reply.calls), 3),
    inputTokensPerEpisode: round(perEpisode(wire.inputTokens - reply.inputTokens), 0),
    activeMemoriesPer1000Episodes: round(perEpisode(store.activeMemories) * 1_000, 1),
    allPurposesCallsPerEpisode: round(perEpisode(wire.calls), 3),
    allPurposesInputTokensPerEpisode: round(perEpisode(wire.inputTokens), 0),
    memoriesWithDuplicatePct: round(perMemory(store.duplicatedMemories)),
    repairCallsPer1000Episodes: round(perEpisode(wire.repairs) * 1_000, 1),
    ...(schedule && {
      consolidationLagHoursP95: round(percentile(schedule.dailyTalkerHours, 95), 1),
      consolidationCallsPerPersonNight: round(schedule.personNights === 0 ? 0 : schedule.nightCalls / schedule.personNights),
      recentFactRecallPct: round(schedule.questions.length === 0 ? 0 : (schedule.questions.filter((q) => q.held).length / schedule.questions.length) * 100, 1),
    }),
  };
}
