/**
 * How a conversation ends: explicitly (`/end`), or when it has been idle past
 * AGENT_IDLE_END_MINUTES (found by the idle sweep, or by the next message), each leaving a short
 * memory of it (`conversation-end.ts`); and the idle sweep's other task, compacting a working
 * context that sat idle at the idle threshold. Everything here runs on the scope's lane, so it
 * never interleaves with a reply of the same scope.
 */
import type { WorkingMemory } from '../memory/conversations/conversation-store';
import type { Scope } from '../memory/records';
import type { ScopePolicy } from '../memory/scopes/scope-policy';
import type { AgentServices, EndResult, IdleSweepResult } from './agent';
import { END_TURNS } from './conversation-end';
import type { ScopeQueue } from './scope-queue';
import type { TurnParts } from './turn-parts';

/** The lanes turns run on: an identity's (resolving its scope, in arrival order) and a scope's. */
export interface TurnLanes {
  readonly identity: ScopeQueue;
  readonly scope: ScopeQueue;
}

export interface ConversationClosing {
  /** Ends the open conversation `memory` of `scope` and records its memory (the caller holds the scope's lane). */
  endOpen(scope: Scope, memory: WorkingMemory, reason: string, now: Date, policy?: ScopePolicy): Promise<EndResult>;
  /** Ends the open conversation of the scope an identity speaks into. */
  endConversation(scopeKey: string, reason: string): Promise<EndResult>;
  /** Ends conversations idle past AGENT_IDLE_END_MINUTES; compacts idle ones at the idle threshold. */
  sweepIdle(now?: Date): Promise<IdleSweepResult>;
  /** Runs {@link ConversationClosing.sweepIdle} every `intervalMs` until the handle is stopped. */
  startIdleSweep(intervalMs?: number): { stop(): Promise<void> };
}

/** Builds the ending of conversations on the given parts, scope directory and lanes. */
export function createConversationClosing(parts: TurnParts, directory: AgentServices['scopes'], lanes: TurnLanes): ConversationClosing {
  const { store, log, settings, compactor, clock } = parts;

  async function endOpen(scope: Scope, memory: WorkingMemory, reason: string, now: Date, policy: ScopePolicy = parts.policyOf(scope)): Promise<EndResult> {
    const turns = await store.lastTurns(memory, END_TURNS);
    const memoryId = await parts.endMemory.remember({ scope, policy, conversationId: memory.conversationId, summary: memory.summary, turns, reason, now });
    await store.end(memory, reason, now);
    log.info('conversation ended', { scope: scope.key, conversationId: memory.conversationId, reason, memoryId, compactions: memory.state.compaction.cycle });
    return { ended: true, conversationId: memory.conversationId, memoryId };
  }

  /** Ends the conversations idle past AGENT_IDLE_END_MINUTES; how many were ended. */
  async function endIdle(now: Date): Promise<number> {
    let ended = 0;
    for (const idle of await store.idleSince(new Date(now.getTime() - settings.idleEndMinutes * 60_000))) {
      try {
        const result = await lanes.scope(idle.scopeId, async () => {
          const scope = await directory.findByKey(idle.scopeKey);
          const memory = scope ? await store.find(scope.id) : null;
          // A message may have arrived since the list was read.
          if (!scope || !memory || memory.conversationId !== idle.conversationId || memory.lastActivityAt.getTime() !== idle.lastActivityAt.getTime())
            return { ended: false };
          return endOpen(scope, memory, 'idle', now);
        });
        if (result.ended) ended++;
      } catch (error) {
        log.error('could not end an idle conversation', { scope: idle.scopeKey, error });
      }
    }
    return ended;
  }

  /** Compacts the working contexts idle past the idle-compaction time; how many were compacted. */
  async function compactIdle(now: Date): Promise<number> {
    let compacted = 0;
    for (const idle of await store.idleSince(new Date(now.getTime() - parts.idleCompactMs))) {
      try {
        const outcome = await lanes.scope(idle.scopeId, async () => {
          const memory = await store.find(idle.scopeId);
          if (!memory || !compactor.due(memory, memory.state.lastContextTokens, now, true)) return undefined;
          return compactor.compact(memory, now);
        });
        if (outcome?.status === 'compacted') compacted++;
      } catch (error) {
        log.error('idle compaction failed', { scope: idle.scopeKey, error });
      }
    }
    return compacted;
  }

  const closing: ConversationClosing = {
    endOpen,
    async endConversation(scopeKey, reason) {
      const scope = await lanes.identity(scopeKey, async () => {
        const linked = await directory.linkedScopeId?.(scopeKey);
        return linked ? await directory.findById(linked) : await directory.findByKey(scopeKey);
      });
      if (!scope) return { ended: false };
      return lanes.scope(scope.id, async () => {
        const memory = await store.find(scope.id);
        if (!memory) return { ended: false };
        return endOpen(scope, memory, reason, clock());
      });
    },
    async sweepIdle(at) {
      const now = at ?? clock();
      const ended = settings.idleEndMinutes > 0 ? await endIdle(now) : 0;
      const compacted = await compactIdle(now);
      return { ended, compacted };
    },
    startIdleSweep(intervalMs = 60_000) {
      let running: Promise<unknown> = Promise.resolve();
      const timer = setInterval(() => {
        running = running.then(() => closing.sweepIdle()).catch((error: unknown) => log.error('idle sweep failed', { error }));
      }, intervalMs);
      timer.unref();
      return {
        async stop() {
          clearInterval(timer);
          await running;
        },
      };
    },
  };
  return closing;
}
