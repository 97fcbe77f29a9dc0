/**
 * The parts every turn of one agent works with, built once from its services and settings: the
 * token estimator and reply budget, the tools the model may call, the prompt builder, the model
 * call with its tool rounds, the reply limits, the compactor, the writer of a conversation's end
 * memory, and the scope policy read for each turn. The turn (`reply-turn.ts`) and the ending of
 * conversations (`conversation-closing.ts`) share them, so both read the same settings.
 */
import type { AgentConfig } from '../config/load-config';
import type { ConversationStore } from '../memory/conversations/conversation-store';
import type { EpisodeService } from '../memory/episodes/episode-service';
import type { Scope } from '../memory/records';
import { policyDefaults, resolvePolicy, type ScopePolicy } from '../memory/scopes/scope-policy';
import type { Logger } from '../shared/logger';
import type { AgentOptions, AgentServices } from './agent';
import { createCompactor, type Compactor } from './compaction';
import { createEndMemoryWriter, type EndMemoryWriter } from './conversation-end';
import { createMemoryTools, type MemoryTools } from './memory-tools';
import { createReminderTools, joinTools } from './reminder-tools';
import { createReplyLimits, type ReplyLimits } from './reply-limits';
import { createReplyPrompts, type ReplyPrompts } from './reply-prompt';
import { createTokenEstimator, resolveReplyBudget, type ReplyBudget, type TokenEstimator } from './token-budget';
import { createToolRounds, MAX_TOOL_ROUNDS, type Converse } from './tool-rounds';

/** What a turn and a conversation's ending are made of (see the file's header). */
export interface TurnParts {
  readonly config: AgentServices['config'];
  /** The AGENT_* settings with the agent's overrides applied. */
  readonly settings: AgentConfig;
  readonly clock: () => Date;
  /** The agent's logger (component "agent"). */
  readonly log: Logger;
  readonly episodes: EpisodeService;
  readonly store: ConversationStore;
  readonly estimator: TokenEstimator;
  readonly budget: ReplyBudget;
  readonly tools: MemoryTools;
  readonly prompts: ReplyPrompts;
  readonly converse: Converse;
  readonly limits: ReplyLimits;
  readonly compactor: Compactor;
  readonly endMemory: EndMemoryWriter;
  /** How the agent signs its episodes. */
  readonly agentName: string;
  /** Idle time after which compaction uses the idle threshold. */
  readonly idleCompactMs: number;
  /**
   * The scope's policy (zone, cap, budgets), resolved once per turn from the row read for it; an
   * invalid stored field falls back to the service default, with a log line naming it.
   */
  policyOf(scope: Scope): ScopePolicy;
}

/** Builds the parts of one agent's turns (see {@link TurnParts}). */
export function createTurnParts(params: AgentServices & { options?: AgentOptions }, systemPrompt: string): TurnParts {
  const { config, llm, logger, memories: memoryStore, episodes, conversations: store } = params;
  const options = params.options ?? {};
  const settings: AgentConfig = { ...config.agent, ...options.settings };
  const log: Logger = logger.child({ component: 'agent' });
  const estimator = createTokenEstimator(llm.provider, llm.model);
  const budget = resolveReplyBudget(settings, llm.contextWindow);
  const endMemory = createEndMemoryWriter({
    llm,
    memories: memoryStore,
    logger: log,
    estimator,
    contextTokens: budget.contextTokens,
    summarize: settings.endSummary,
  });
  const memoryTools = createMemoryTools({ memories: memoryStore, episodes, search: params.search, logger });
  // Reminders are offered only where a reminder book was given (a service with channels to deliver them).
  const tools = params.reminders
    ? joinTools(memoryTools, createReminderTools({ reminders: params.reminders, logger, defaultTimeZone: config.timeZone }))
    : memoryTools;
  const compactor = createCompactor({
    llm,
    conversations: store,
    estimator,
    logger,
    options: {
      strategy: settings.compactionStrategy,
      recentTurns: budget.recentTurns,
      summaryTokens: budget.summaryTokens,
      contextTokens: budget.contextTokens,
      cooldownMs: settings.compactionCooldownMs,
    },
  });
  const converse = createToolRounds({ llm, estimator, budget, tools, maxToolRounds: options.maxToolRounds ?? MAX_TOOL_ROUNDS });
  const prompts = createReplyPrompts({
    config,
    context: params.context,
    conversations: store,
    memories: memoryStore,
    soul: params.soul,
    logger: log,
    budget,
    estimator,
    systemPrompt,
    tools: tools.definitions,
  });
  return {
    config,
    settings,
    clock: options.clock ?? (() => new Date()),
    log,
    episodes,
    store,
    estimator,
    budget,
    tools,
    prompts,
    converse,
    limits: createReplyLimits({ episodes, settings }),
    compactor,
    endMemory,
    agentName: options.agentName ?? 'Nocturne',
    idleCompactMs: (options.idleCompactMinutes ?? config.sleep.idleMinutes) * 60_000,
    policyOf(scope) {
      // The agent's settings (AgentOptions may override REPLY_DAILY_BUDGET) are the reply budget's default.
      const policy = resolvePolicy(scope, { ...policyDefaults(config), replyDailyBudget: settings.replyDailyBudget });
      if (policy.problems.length > 0)
        log.warn('scope settings are invalid; the service defaults stand in for them', { scope: scope.key, problems: policy.problems });
      return policy;
    },
  };
}
