/**
 * Bearer-token authentication of the admin API: `Authorization: Bearer <ADMIN_TOKEN>`, compared
 * in constant time (hashes of equal length, so neither content nor length leaks through timing).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(.+)$/i.exec(header?.trim() ?? '')?.[1] ?? '';
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}
