/**
 * Checking the init data Telegram gives a Mini App (the memory page opened from the bot), as
 * Telegram documents it ("Validating data received via the Mini App"): the data-check string is
 * every received field but `hash`, as `key=value` lines sorted by key; the secret is
 * HMAC-SHA256 of the bot token keyed with "WebAppData"; the data is Telegram's when `hash` is the
 * hex HMAC-SHA256 of the data-check string under that secret. Only the bot's own token makes that
 * hash, so forged data and another bot's data are refused alike; `auth_date` bounds how long a
 * captured copy can be replayed.
 *
 * A pure function with the clock given, so its unit test pins the algorithm and the age rule.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The Telegram user the init data names (the fields the page uses). */
export interface InitDataUser {
  readonly id: number;
  readonly firstName: string;
  readonly lastName?: string;
  readonly username?: string;
}

/** Init data Telegram signed, read. */
export interface ValidInitData {
  readonly ok: true;
  readonly user: InitDataUser;
  /** `startapp` of a direct Mini App link (the memory page names a group with it). */
  readonly startParam?: string;
  readonly authDate: Date;
}

/** Why init data was refused (never echoing the data itself). */
export interface RefusedInitData {
  readonly ok: false;
  readonly reason: 'malformed' | 'bad-hash' | 'expired' | 'no-user';
}

/** Longest init data read: Telegram's is well under 2 KB; more is not Telegram's. */
export const MAX_INIT_DATA_LENGTH = 8 * 1024;
/** Seconds an `auth_date` may lie ahead of the server's clock (clock skew), no more. */
const FUTURE_SKEW_SECONDS = 60;

const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();

/** The hash Telegram puts in init data with these fields for the bot `botToken` (tests sign with it too). */
export function initDataHash(fields: ReadonlyArray<readonly [string, string]>, botToken: string): string {
  const check = fields
    .filter(([key]) => key !== 'hash')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('\n');
  return hmac(hmac('WebAppData', botToken), check).toString('hex');
}

/**
 * Reads `raw` (the Mini App's `Telegram.WebApp.initData`, a query string) and checks it was signed
 * for `botToken` at most `maxAgeSeconds` before `now`.
 */
export function validateInitData(raw: string, options: { botToken: string; maxAgeSeconds: number; now: Date }): ValidInitData | RefusedInitData {
  if (raw.length === 0 || raw.length > MAX_INIT_DATA_LENGTH) return { ok: false, reason: 'malformed' };
  const fields = [...new URLSearchParams(raw).entries()];
  const keys = new Set(fields.map(([key]) => key));
  if (keys.size !== fields.length) return { ok: false, reason: 'malformed' };
  const given = fields.find(([key]) => key === 'hash')?.[1] ?? '';
  if (!/^[0-9a-f]{64}$/.test(given)) return { ok: false, reason: 'malformed' };
  const expected = Buffer.from(initDataHash(fields, options.botToken), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) return { ok: false, reason: 'bad-hash' };

  const field = (key: string) => fields.find(([k]) => k === key)?.[1];
  const authSeconds = Number(field('auth_date'));
  if (!Number.isInteger(authSeconds) || authSeconds <= 0) return { ok: false, reason: 'malformed' };
  const age = options.now.getTime() / 1000 - authSeconds;
  if (age > options.maxAgeSeconds || age < -FUTURE_SKEW_SECONDS) return { ok: false, reason: 'expired' };

  const user = parseUser(field('user'));
  if (!user) return { ok: false, reason: 'no-user' };
  const startParam = field('start_param');
  return { ok: true, user, authDate: new Date(authSeconds * 1000), ...(startParam && { startParam }) };
}

function parseUser(json: string | undefined): InitDataUser | null {
  if (!json) return null;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  const u = value as Record<string, unknown>;
  if (typeof u.id !== 'number' || !Number.isSafeInteger(u.id) || u.id <= 0) return null;
  const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
  return {
    id: u.id,
    firstName: text(u.first_name) ?? String(u.id),
    ...(text(u.last_name) && { lastName: text(u.last_name) }),
    ...(text(u.username) && { username: text(u.username) }),
  };
}
