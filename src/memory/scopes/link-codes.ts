/**
 * Pairing two of a person's identities with a one-time code: `/link` in one chat answers a code,
 * `/link CODE` in another joins the second to the first (identity-links.ts `join`; the second's
 * memory is merged into the first's).
 *
 * Only the code's SHA-256 is stored, so neither the database nor a log can give it away, and the
 * code is never written to a log or an audit event. A code joins nothing but the identity that
 * asked for it (it is bound to that identity's key), once (it is marked used in the same
 * statement that checks it is unused), within {@link CODE_TTL_MS}; asking again replaces an unused
 * one. Wrong codes are counted per identity in the audit log: after {@link MAX_FAILED_ATTEMPTS}
 * in {@link ATTEMPT_WINDOW_MS} the identity is refused until the window has passed, which with
 * {@link CODE_LENGTH} characters of 32 leaves a guesser about one chance in 10^11 per window.
 */
import { createHash, randomInt } from 'node:crypto';
import { ValidationError } from '../../shared/errors';
import type { PrismaClient } from '../../storage/prisma';
import type { ChangeOrigin } from '../memories/memory-writer';
import type { IdentityScopes, JoinResult } from './identity-links';
import type { ScopeDescriptor } from './scope-directory';

/** How long a code is valid. */
export const CODE_TTL_MS = 10 * 60_000;
/** Characters of a code (Crockford's base 32: no I, L, O or U to misread). */
export const CODE_LENGTH = 8;
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** Wrong codes one identity may try within {@link ATTEMPT_WINDOW_MS}. */
export const MAX_FAILED_ATTEMPTS = 5;
export const ATTEMPT_WINDOW_MS = 10 * 60_000;
const REFUSED = 'link-refused';

/** A code as issued: shown once to the person, never stored. */
export interface IssuedCode {
  readonly code: string;
  readonly expiresAt: Date;
}

export interface LinkCodes {
  /** A new code for `identity` (its scope is created if needed); an unused earlier one stops working. */
  issue(identity: ScopeDescriptor, origin: ChangeOrigin): Promise<IssuedCode>;
  /** Joins `identity` to the identity that asked for `code`; a wrong, used or expired code is a ValidationError. */
  redeem(identity: ScopeDescriptor, code: string, origin: ChangeOrigin): Promise<JoinResult>;
}

/** The stored form of a code: SHA-256 of its normalized text. */
export function hashCode(code: string): string {
  return createHash('sha256').update(normalizeCode(code)).digest('hex');
}

/** A code as typed, upper-cased, without spaces and dashes, with the letters base 32 reads as digits. */
function normalizeCode(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
}

function newCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

export function createLinkCodes(deps: { prisma: PrismaClient; identities: IdentityScopes }): LinkCodes {
  const { prisma, identities } = deps;

  function refuseUnlinkable(identity: ScopeDescriptor): void {
    const problem = identities.linkProblem(identity);
    if (problem) throw new ValidationError(problem, { code: 'link.not_allowed' });
  }

  return {
    async issue(identity, origin) {
      refuseUnlinkable(identity);
      const scope = await identities.resolve(identity);
      const code = newCode();
      const expiresAt = new Date(origin.now.getTime() + CODE_TTL_MS);
      await prisma.$transaction([
        prisma.linkCode.deleteMany({ where: { identityKey: identity.key, usedAt: null } }),
        prisma.linkCode.create({ data: { codeHash: hashCode(code), identityKey: identity.key, expiresAt, createdAt: origin.now } }),
        prisma.auditEvent.create({
          data: {
            scopeId: scope.id,
            action: 'link-code',
            subjectType: 'identity',
            subjectId: identity.key,
            after: { expiresAt: expiresAt.toISOString() },
            createdAt: origin.now,
          },
        }),
      ]);
      return { code, expiresAt };
    },

    async redeem(identity, code, origin) {
      refuseUnlinkable(identity);
      const scope = await identities.resolve(identity);
      const since = new Date(origin.now.getTime() - ATTEMPT_WINDOW_MS);
      const failures = await prisma.auditEvent.findMany({
        where: { scopeId: scope.id, action: REFUSED, subjectId: identity.key, createdAt: { gte: since } },
        orderBy: { createdAt: 'asc' },
        select: { createdAt: true },
      });
      if (failures.length >= MAX_FAILED_ATTEMPTS) {
        const minutes = Math.ceil((failures[0]!.createdAt.getTime() + ATTEMPT_WINDOW_MS - origin.now.getTime()) / 60_000);
        throw new ValidationError(`too many wrong codes; try again in ${Math.max(1, minutes)} min`, { code: 'link.rate_limited' });
      }
      const refuse = async (why: string, message: string): Promise<never> => {
        await prisma.auditEvent.create({
          data: { scopeId: scope.id, action: REFUSED, subjectType: 'identity', subjectId: identity.key, reason: why, createdAt: origin.now },
        });
        throw new ValidationError(message, { code: 'link.invalid_code' });
      };
      const codeHash = hashCode(code);
      const row = await prisma.linkCode.findUnique({ where: { codeHash } });
      if (!row || row.usedAt || row.expiresAt <= origin.now)
        return refuse('a wrong, used or expired code', 'that code is not valid (wrong, already used or expired); ask for a new one with /link');
      if (row.identityKey === identity.key) return refuse('its own code', 'this code was made here: send /link CODE in your other chat');
      // Single use even when two chats send the same code at once: only one update finds it unused.
      const taken = await prisma.linkCode.updateMany({ where: { codeHash, usedAt: null }, data: { usedAt: origin.now } });
      if (taken.count !== 1) return refuse('a used code', 'that code is not valid (wrong, already used or expired); ask for a new one with /link');
      return identities.join(identity.key, row.identityKey, { ...origin, reason: origin.reason ?? 'linked with a one-time code' });
    },
  };
}
