/**
 * The forget previews an MCP client was shown and may confirm: `memory_forget` without a token
 * returns exactly what would go and a token; the same call with that token removes exactly that.
 *
 * A preview is kept in this process (HTTP requests are stateless, so the book is shared by every
 * request of the listener, and each stdio process has its own), bound to the scope it was made
 * in and to what it was asked for. A token is used once: a confirm whose token is unknown,
 * expired, made in another scope or for another memory or other words is refused; in its own
 * scope the preview is dropped too, so the client must look again before anything goes (another
 * scope cannot spend it: there the token does not exist).
 */
import { randomBytes } from 'node:crypto';
import type { ForgetPreview } from '../memory/forget/forget-service';

/** What a forget was asked for: one memory (with its versions) or every memory holding some words. */
export type ForgetTarget = { readonly memoryId: string } | { readonly words: string };

/** How long a preview may be confirmed: long enough for a person to read it and answer. */
export const FORGET_PREVIEW_TTL_MS = 10 * 60_000;
/** Previews kept at most (oldest dropped first), so a client cannot grow the book without end. */
const MAX_PREVIEWS = 1_000;
const TOKEN_BYTES = 16;

interface Pending {
  readonly scopeId: string;
  readonly target: ForgetTarget;
  readonly preview: ForgetPreview;
  readonly expiresAt: number;
}

/** Why a confirm is refused, in words an MCP client can show its person. */
export type Refusal = 'unknown' | 'expired' | 'mismatch';

export interface ForgetPreviewBook {
  /** Keeps the preview; returns the token that confirms it. */
  hold(scopeId: string, target: ForgetTarget, preview: ForgetPreview): string;
  /** The preview the token names, when it was made in this scope for this very target; spent by any take in its scope. */
  take(scopeId: string, target: ForgetTarget, token: string): { preview: ForgetPreview } | { refused: Refusal };
}

const sameTarget = (a: ForgetTarget, b: ForgetTarget) =>
  'memoryId' in a ? 'memoryId' in b && a.memoryId === b.memoryId : 'words' in b && a.words.trim() === b.words.trim();

export function createForgetPreviewBook(clock: () => number = Date.now): ForgetPreviewBook {
  const pending = new Map<string, Pending>();
  return {
    hold(scopeId, target, preview) {
      const now = clock();
      for (const [token, entry] of pending) if (entry.expiresAt <= now) pending.delete(token);
      while (pending.size >= MAX_PREVIEWS) pending.delete(pending.keys().next().value!);
      const token = randomBytes(TOKEN_BYTES).toString('base64url');
      pending.set(token, { scopeId, target, preview, expiresAt: now + FORGET_PREVIEW_TTL_MS });
      return token;
    },
    take(scopeId, target, token) {
      const entry = pending.get(token);
      // Another scope's token reads exactly like an unknown one: it says nothing about that scope.
      if (!entry || entry.scopeId !== scopeId) return { refused: 'unknown' };
      pending.delete(token);
      if (entry.expiresAt <= clock()) return { refused: 'expired' };
      if (!sameTarget(entry.target, target)) return { refused: 'mismatch' };
      return { preview: entry.preview };
    },
  };
}
