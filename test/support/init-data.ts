/**
 * Telegram Mini App init data as Telegram signs it, written out here from Telegram's documentation
 * ("Validating data received via the Mini App") rather than with the service's own code, so the
 * tests check the service against the documented algorithm: the data-check string is every field
 * but `hash` as `key=value` lines sorted by key; the secret is HMAC-SHA256 of the bot token keyed
 * with "WebAppData"; `hash` is the hex HMAC-SHA256 of the data-check string under that secret.
 */
import { createHmac } from 'node:crypto';

export function signInitData(fields: Readonly<Record<string, string>>, botToken: string): string {
  const check = Object.keys(fields)
    .sort()
    .map((key) => `${key}=${fields[key]}`)
    .join('\n');
  const secret = createHmac('sha256', 'WebAppData').update(botToken).digest();
  const hash = createHmac('sha256', secret).update(check).digest('hex');
  return new URLSearchParams({ ...fields, hash }).toString();
}

/** The fields Telegram sends for `user` opening the app at `authDate` (seconds), with an optional `start_param`. */
export function initDataFields(user: { id: number; first_name: string }, authDate: number, startParam?: string): Record<string, string> {
  return {
    query_id: 'AAHdF6IQAAAAAN0XohDhrOrc',
    user: JSON.stringify({ id: user.id, first_name: user.first_name, language_code: 'en', allows_write_to_pm: true }),
    auth_date: String(authDate),
    signature: 'c2lnbmF0dXJlLW9mLXRoZS10aGlyZC1wYXJ0eS1rZXk',
    ...(startParam !== undefined && { start_param: startParam }),
  };
}
