/**
 * The agent's cache of scope rows: the scope row of a message, created on first use and then kept
 * (one query less per turn). It keeps the {@link SCOPE_CACHE_SIZE} most recently used scopes:
 * unbounded, it grew with every chat that ever wrote (about 1.5 KB each; found by the load
 * bench's heap snapshots).
 */
import type { Scope } from '../memory/records';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import { scopeOf, type InboundMessage } from './inbound-message';

/** Scope rows the agent keeps in memory, most recently used first. */
export const SCOPE_CACHE_SIZE = 1_000;

export interface ScopeRowCache {
  /** The scope row of the message, from the cache or created (ensured) and then cached. */
  row(message: InboundMessage): Promise<Scope>;
  /** Drops a scope's row, so the next message reads it again. */
  forget(scopeKey: string): void;
}

export function createScopeRowCache(directory: Pick<ScopeDirectory, 'ensure'>): ScopeRowCache {
  const scopes = new Map<string, Scope>();
  return {
    async row(message) {
      const known = scopes.get(message.scopeKey);
      if (known) {
        scopes.delete(message.scopeKey);
        scopes.set(message.scopeKey, known);
        return known;
      }
      const row = await directory.ensure(scopeOf(message));
      scopes.set(message.scopeKey, row);
      if (scopes.size > SCOPE_CACHE_SIZE) scopes.delete(scopes.keys().next().value!);
      return row;
    },
    forget(scopeKey) {
      scopes.delete(scopeKey);
    },
  };
}
