/**
 * Personal access tokens of a scope: the bearer a person's own tools (an MCP client on their
 * desktop) present to reach that one scope's memory, and nothing else.
 *
 * A token is `nmcp_<scope id>_<token id>_<secret>`: the scope and token ids let the service find
 * the one stored entry to compare with (no scan of every scope), the secret (32 random bytes) is
 * what makes it unguessable. Only the SHA-256 of the whole token is kept, in the scope's
 * `settings.accessTokens` (beside the sleep settings, which ignore the key), so a copy of the
 * database or an export gives nobody a usable token. Issuing and revoking are audited on the
 * scope (`token.issue`, `token.revoke`, without the token); a revoked token stops working at its
 * next request.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Prisma, PrismaClient, Scope } from '../../storage/prisma';

/** The prefix every token starts with, so a leaked one is recognisable for what it is. */
export const SCOPE_TOKEN_PREFIX = 'nmcp';
/** Random bytes of a token's secret part (256 bits). */
const SECRET_BYTES = 32;
/** Random bytes of a token's id (shown by `list`, named by `revoke`). */
const ID_BYTES = 6;
/** Longest label a token may carry (e.g. "laptop, Claude Desktop"). */
export const MAX_TOKEN_LABEL = 100;
const SETTINGS_KEY = 'accessTokens';
/** Scope ids are UUIDs (any id without `_` would do); the token id is hex; the secret base64url. */
const TOKEN_SHAPE = /^nmcp_([0-9A-Za-z-]{1,64})_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

/** A token as listed: never its secret. */
export interface ScopeTokenInfo {
  readonly id: string;
  readonly label: string | null;
  readonly createdAt: string;
}

interface StoredToken extends ScopeTokenInfo {
  /** SHA-256 of the whole token, hex. */
  readonly hash: string;
}

export interface ScopeTokens {
  /** A new token for the scope; the token itself is returned once and never stored. */
  issue(scopeId: string, options?: { label?: string; reason?: string }): Promise<ScopeTokenInfo & { token: string }>;
  /** The scope's tokens (ids, labels, dates). */
  list(scopeId: string): Promise<ScopeTokenInfo[]>;
  /** Revokes one token by id, or every token of the scope with `'all'`; returns how many went. */
  revoke(scopeId: string, id: string | 'all', options?: { reason?: string }): Promise<number>;
  /** The scope a token opens, or null for anything that is not a current token of it. */
  verify(token: string): Promise<Scope | null>;
}

function hashOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function storedTokens(settings: Prisma.JsonValue | null): StoredToken[] {
  if (!settings || typeof settings !== 'object' || Array.isArray(settings)) return [];
  const list = (settings as Record<string, unknown>)[SETTINGS_KEY];
  if (!Array.isArray(list)) return [];
  const isToken = (t: unknown): t is StoredToken =>
    !!t && typeof t === 'object' && typeof (t as StoredToken).id === 'string' && typeof (t as StoredToken).hash === 'string';
  return list.filter(isToken);
}

function withTokens(settings: Prisma.JsonValue | null, tokens: readonly StoredToken[]): Prisma.InputJsonObject {
  const base = settings && typeof settings === 'object' && !Array.isArray(settings) ? { ...(settings as Record<string, unknown>) } : {};
  return { ...base, [SETTINGS_KEY]: tokens.map((t) => ({ ...t })) } as Prisma.InputJsonObject;
}

const infoOf = (t: StoredToken): ScopeTokenInfo => ({ id: t.id, label: t.label ?? null, createdAt: t.createdAt });

export function createScopeTokens(prisma: PrismaClient, clock: () => Date = () => new Date()): ScopeTokens {
  async function change(
    scopeId: string,
    edit: (tokens: StoredToken[]) => StoredToken[],
    audit: { action: string; after: Prisma.InputJsonObject; reason?: string },
  ) {
    await prisma.$transaction(async (tx) => {
      const scope = await tx.scope.findUnique({ where: { id: scopeId } });
      if (!scope) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
      const tokens = edit(storedTokens(scope.settings));
      await tx.scope.update({ where: { id: scopeId }, data: { settings: withTokens(scope.settings, tokens) } });
      await tx.auditEvent.create({
        data: { scopeId, action: audit.action, subjectType: 'scope', subjectId: scopeId, after: audit.after, reason: audit.reason ?? null, createdAt: clock() },
      });
    });
  }

  return {
    async issue(scopeId, options = {}) {
      const label = options.label?.trim() || null;
      if (label && label.length > MAX_TOKEN_LABEL)
        throw new ValidationError(`a token's label is at most ${MAX_TOKEN_LABEL} characters`, { code: 'token.label' });
      const id = randomBytes(ID_BYTES).toString('hex');
      const token = `${SCOPE_TOKEN_PREFIX}_${scopeId}_${id}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
      const entry: StoredToken = { id, label, createdAt: clock().toISOString(), hash: hashOf(token) };
      await change(scopeId, (tokens) => [...tokens, entry], { action: 'token.issue', after: { tokenId: id, label }, reason: options.reason });
      return { ...infoOf(entry), token };
    },
    async list(scopeId) {
      const scope = await prisma.scope.findUnique({ where: { id: scopeId }, select: { settings: true } });
      return storedTokens(scope?.settings ?? null).map(infoOf);
    },
    async revoke(scopeId, id, options = {}) {
      let removed = 0;
      await change(
        scopeId,
        (tokens) => {
          const kept = tokens.filter((t) => id !== 'all' && t.id !== id);
          removed = tokens.length - kept.length;
          return kept;
        },
        { action: 'token.revoke', after: { tokenId: id }, reason: options.reason },
      );
      return removed;
    },
    async verify(token) {
      const match = TOKEN_SHAPE.exec(token.trim());
      if (!match) return null;
      const [, scopeId, id] = match;
      const scope = await prisma.scope.findUnique({ where: { id: scopeId! } });
      const stored = scope && storedTokens(scope.settings).find((t) => t.id === id);
      if (!scope || !stored) return null;
      const given = Buffer.from(hashOf(token.trim()), 'hex');
      const expected = Buffer.from(stored.hash, 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected) ? scope : null;
    },
  };
}
