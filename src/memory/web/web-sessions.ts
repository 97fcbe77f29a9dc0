/**
 * The memory page in an ordinary browser: `/web` in a chat (or `cli web-link`) answers a
 * single-use link; opening it starts a session held in a cookie. Both are bound to one scope and
 * to the identity that asked, and show nothing else.
 *
 * Only SHA-256 hashes of the link's token and of the cookie's value are stored (like the link codes
 * of link-codes.ts), so a copy of the database, an export or a log gives nobody a usable link or
 * session. The link works once: it is redeemed by the one update that finds it unredeemed and
 * unexpired, which also turns the row into the session. The CSRF token the page sends with every
 * change is derived from the cookie's value (a one-way hash of it), so it is never stored, differs
 * per session, and cannot give the cookie away. Links, sessions and their end are audited on the
 * scope, without any token.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { PrismaClient } from '../../storage/prisma';

/** How long a link can be opened. */
export const WEB_LINK_TTL_MS = 10 * 60_000;
/** How long a session opened by a link lasts (a working day; `/web` again gives a new one). */
export const WEB_SESSION_TTL_MS = 12 * 60 * 60_000;
/** Random bytes of a link token and of a session cookie (256 bits). */
const SECRET_BYTES = 32;
/** A token or cookie value as this service makes them: base64url of {@link SECRET_BYTES} bytes. */
const SECRET_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** A link as issued: the token is shown once, in the URL, and never stored. */
export interface IssuedWebLink {
  readonly token: string;
  readonly expiresAt: Date;
}

/** A browser session as a request sees it. */
export interface WebSessionView {
  readonly scopeId: string;
  /** The identity that asked for the link (the session's person). */
  readonly identityKey: string;
  /** What a POST must carry in `X-CSRF-Token`. */
  readonly csrf: string;
  readonly expiresAt: Date;
}

/** A session just opened: its cookie value (set once in the browser, never stored) and its view. */
export interface OpenedWebSession extends WebSessionView {
  readonly cookie: string;
}

export interface WebSessions {
  /** A new single-use link to the scope, for the identity that asked (audited `web-link`). */
  issueLink(target: { scopeId: string; identityKey: string }, origin: { now: Date; reason?: string }): Promise<IssuedWebLink>;
  /** Opens a link once: the new session, or null for a wrong, used or expired link. */
  redeem(token: string, now: Date): Promise<OpenedWebSession | null>;
  /** The session a cookie value opens, or null (unknown, ended, expired). */
  verify(cookie: string, now: Date): Promise<WebSessionView | null>;
  /** Ends the session (logout); returns whether there was one. */
  end(cookie: string, now: Date): Promise<boolean>;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const secret = () => randomBytes(SECRET_BYTES).toString('base64url');

/** The CSRF token of a session: a one-way hash of its cookie value, so neither gives the other away. */
export function csrfTokenOf(cookie: string): string {
  return createHash('sha256').update(`nocturne csrf\n${cookie}`).digest('base64url');
}

export function createWebSessions(prisma: PrismaClient): WebSessions {
  const audit = (scopeId: string, action: string, now: Date, reason: string | null, after?: Record<string, string>) =>
    prisma.auditEvent.create({ data: { scopeId, action, subjectType: 'scope', subjectId: scopeId, reason, createdAt: now, ...(after && { after }) } });

  return {
    async issueLink(target, origin) {
      const token = secret();
      const expiresAt = new Date(origin.now.getTime() + WEB_LINK_TTL_MS);
      await prisma.$transaction([
        // Expired links and sessions of every scope are of no use to anyone: they go here.
        prisma.webSession.deleteMany({ where: { expiresAt: { lt: origin.now } } }),
        prisma.webSession.create({
          data: { linkHash: sha256(token), scopeId: target.scopeId, identityKey: target.identityKey, expiresAt, createdAt: origin.now },
        }),
        audit(target.scopeId, 'web-link', origin.now, origin.reason ?? null, { identity: target.identityKey, expiresAt: expiresAt.toISOString() }),
      ]);
      return { token, expiresAt };
    },

    async redeem(token, now) {
      if (!SECRET_SHAPE.test(token)) return null;
      const linkHash = sha256(token);
      const cookie = secret();
      const expiresAt = new Date(now.getTime() + WEB_SESSION_TTL_MS);
      // Single use even when the link is opened twice at once: only one update finds it unredeemed.
      const taken = await prisma.webSession.updateMany({
        where: { linkHash, redeemedAt: null, expiresAt: { gt: now } },
        data: { redeemedAt: now, sessionHash: sha256(cookie), expiresAt },
      });
      if (taken.count !== 1) return null;
      const row = await prisma.webSession.findUnique({ where: { linkHash } });
      if (!row) return null;
      await audit(row.scopeId, 'web-session', now, 'a browser opened a /web link', { identity: row.identityKey });
      return { cookie, scopeId: row.scopeId, identityKey: row.identityKey, csrf: csrfTokenOf(cookie), expiresAt };
    },

    async verify(cookie, now) {
      if (!SECRET_SHAPE.test(cookie)) return null;
      const row = await prisma.webSession.findUnique({ where: { sessionHash: sha256(cookie) } });
      if (!row || row.expiresAt <= now) return null;
      return { scopeId: row.scopeId, identityKey: row.identityKey, csrf: csrfTokenOf(cookie), expiresAt: row.expiresAt };
    },

    async end(cookie, now) {
      if (!SECRET_SHAPE.test(cookie)) return false;
      const row = await prisma.webSession.findUnique({ where: { sessionHash: sha256(cookie) } });
      if (!row) return false;
      await prisma.$transaction([
        prisma.webSession.deleteMany({ where: { id: row.id } }),
        audit(row.scopeId, 'web-logout', now, 'the person logged out of the memory page', { identity: row.identityKey }),
      ]);
      return true;
    },
  };
}

/** The address a link opens: `<base>/app/login?t=<token>` (base: PUBLIC_URL without its trailing slash). */
export function webLoginUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/app/login?t=${token}`;
}
