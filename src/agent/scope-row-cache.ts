/**
 * The agent's cache of scope rows: which scope row a message's key names, created on first use
 * and then kept. It keeps the {@link SCOPE_CACHE_SIZE} most recently used scopes: unbounded, it
 * grew with every chat that ever wrote (about 1.5 KB each; found by the load bench's heap
 * snapshots).
 *
 * What it keeps is the scope's identity (key -> id), never its policy: the row a turn gets is
 * read by id for that turn, because the time zone and settings in it may have changed since the
 * last message (`/timezone`, the admin API, or the CLI in another process), and a cached row
 * would go on serving the old zone to every reply until a restart. That read (by primary key) is
 * the query per turn the cached row once saved: a stale policy was the price of saving it. The
 * key's normalization and creation path still run once per scope.
 */
import type { Scope } from '../memory/records';
import type { ScopeDirectory } from '../memory/scopes/scope-directory';
import { scopeOf, type InboundMessage } from './inbound-message';

/** Scope ids the agent keeps in memory, most recently used first. */
export const SCOPE_CACHE_SIZE = 1_000;

export interface ScopeRowCache {
  /** The scope row of the message as stored now: read by its cached id, or created (ensured) and then cached. */
  row(message: InboundMessage): Promise<Scope>;
  /** Drops a scope's id, so the next message ensures it again. */
  forget(scopeKey: string): void;
}

/**
 * What the cache needs of the directory. `linkedScopeId` (the person directory's,
 * memory/scopes/identity-links.ts) is asked on every message, because a link or an unlink made
 * in another process (`cli link`, the admin API) must take effect on the next message, as a
 * cached id would not.
 */
export type ScopeRowSource = Pick<ScopeDirectory, 'ensure' | 'findById'> & { linkedScopeId?(identityKey: string): Promise<string | null> };

export function createScopeRowCache(directory: ScopeRowSource): ScopeRowCache {
  const ids = new Map<string, string>();
  return {
    async row(message) {
      const linked = directory.linkedScopeId && message.scopeKind !== 'group' ? await directory.linkedScopeId(message.scopeKey) : null;
      if (linked) {
        const row = await directory.findById(linked);
        if (row) return row;
      }
      const id = ids.get(message.scopeKey);
      if (id !== undefined) {
        ids.delete(message.scopeKey);
        const fresh = await directory.findById(id);
        if (fresh) {
          ids.set(message.scopeKey, id);
          return fresh;
        }
        // Purged since: created again below, under a new id.
      }
      const row = await directory.ensure(scopeOf(message));
      ids.set(message.scopeKey, row.id);
      if (ids.size > SCOPE_CACHE_SIZE) ids.delete(ids.keys().next().value!);
      return row;
    },
    forget(scopeKey) {
      ids.delete(scopeKey);
    },
  };
}
