/**
 * The memory page's door checks (docs/channels.md, "The memory page"), apart from the routes:
 * reading the session cookie, the cookie a redeemed link sets, the CSRF rule of browser
 * sessions, and the limit on wrong links per address.
 *
 * The cookie is parsed here rather than with @fastify/cookie: one cookie, read and written in a
 * few lines, needs no dependency.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { WEB_SESSION_TTL_MS } from '../memory/web/web-sessions';

/** The cookie a browser session is held in. */
export const SESSION_COOKIE = 'nocturne_session';
/** The path the cookie is sent on: the page and its data, nothing else of the server. */
const COOKIE_PATH = '/app';

/** The value of the session cookie in a request's `Cookie` header, if any. */
export function sessionCookieOf(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The session cookie: HttpOnly (the page's script never holds it), SameSite=Strict (no other site
 * makes the browser send it), Secure when the page is served over TLS (PUBLIC_URL is https, or the
 * request came over TLS), on `/app` only.
 */
export function sessionCookie(value: string, options: { secure: boolean; clear?: boolean }): string {
  const maxAge = options.clear ? 0 : Math.floor(WEB_SESSION_TTL_MS / 1000);
  return [
    `${SESSION_COOKIE}=${options.clear ? '' : value}`,
    `Path=${COOKIE_PATH}`,
    `Max-Age=${maxAge}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

/** Whether a request carries the session's CSRF token in `X-CSRF-Token` (compared in constant time). */
export function csrfMatches(request: FastifyRequest, expected: string): boolean {
  const given = request.headers['x-csrf-token'];
  if (typeof given !== 'string' || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

/** Methods that change something: a browser session must prove them with the CSRF token. */
export const CHANGING_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Wrong links one address may open within {@link LOGIN_WINDOW_MS} before it is refused for a while. */
export const MAX_LOGIN_FAILURES = 10;
export const LOGIN_WINDOW_MS = 10 * 60_000;
/** Addresses remembered at once (a flood of addresses cannot grow the table without bound). */
const MAX_TRACKED_ADDRESSES = 10_000;

/**
 * Wrong links per client address, in memory: a link's token is 256 random bits, so the limit is not
 * what keeps it unguessable; it keeps a guesser from loading the database, and tells them so (429).
 */
export function createLoginLimiter(clock: () => number = Date.now) {
  const failures = new Map<string, number[]>();
  const recent = (address: string) => (failures.get(address) ?? []).filter((at) => at > clock() - LOGIN_WINDOW_MS);
  return {
    /** Seconds the address must wait, or 0 when it may try. */
    waitSeconds(address: string): number {
      const list = recent(address);
      if (list.length < MAX_LOGIN_FAILURES) return 0;
      return Math.max(1, Math.ceil((list[0]! + LOGIN_WINDOW_MS - clock()) / 1000));
    },
    failed(address: string): void {
      if (failures.size >= MAX_TRACKED_ADDRESSES && !failures.has(address)) failures.delete(failures.keys().next().value!);
      failures.set(address, [...recent(address), clock()]);
    },
  };
}

/** A JSON refusal in the page's shape: `{ error, code }`. */
export function refuse(reply: FastifyReply, status: 401 | 403 | 404 | 429, error: string, code: string): FastifyReply {
  return reply.code(status).header('cache-control', 'no-store').send({ error, code });
}
