/**
 * The one rule for a scope's key, applied by every door that can name a new scope: a chat's first
 * message, the webhook, the terminal, `cli import` (the file's `--scope` and each line's own
 * `scope`), `import-scope` (the export's key or `--as`) and the admin API's import.
 *
 * A key is text a person or a sender chose, so it is normalized once (Unicode NFC, so the same
 * name typed two ways is one scope on SQLite and PostgreSQL alike) and refused when it could not
 * name one scope unambiguously: broken UTF-16 (PostgreSQL would store both `\ud800` and `\udc00`
 * as the same replacement character, and two people would share one memory), control or
 * invisible format characters, surrounding spaces, a name made only of dots (`.`, `..`), or more
 * than {@link SCOPE_KEY_MAX_LENGTH} characters. Nothing Nocturne writes is addressed by a path
 * derived from a key (export folders are named from the scope's id, see export-paths.ts); the dot
 * rule keeps keys that look like paths out of every tool an operator might point at them.
 */
import { ValidationError } from '../../shared/errors';

/** Longest key, in UTF-16 code units after normalization (a Telegram key is under 40). */
export const SCOPE_KEY_MAX_LENGTH = 200;

/** C0 and C1 controls, format characters (zero-width, bidi controls), line and paragraph separators. */
const INVISIBLE = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
const ONLY_DOTS = /^\.+$/;

/** Why `key` cannot be a scope key, or null when it can (after {@link normalizeScopeKey}'s NFC). */
export function scopeKeyProblem(key: unknown): string | null {
  if (typeof key !== 'string') return 'a scope key must be text';
  if (!key.isWellFormed()) return 'a scope key must be well-formed Unicode (it holds half of a surrogate pair)';
  const nfc = key.normalize('NFC');
  if (nfc.length === 0) return 'a scope key cannot be empty';
  if (nfc.length > SCOPE_KEY_MAX_LENGTH) return `a scope key is at most ${SCOPE_KEY_MAX_LENGTH} characters (this one has ${nfc.length})`;
  if (INVISIBLE.test(nfc)) return 'a scope key cannot hold control or invisible characters';
  if (nfc.trim() !== nfc) return 'a scope key cannot start or end with a space';
  if (ONLY_DOTS.test(nfc)) return 'a scope key cannot be made only of dots';
  return null;
}

/**
 * The stored form of a scope key: NFC-normalized, or a {@link ValidationError}
 * (`scope.invalid_key`) saying what is wrong. The key itself is quoted only in part and escaped,
 * since it may hold anything.
 */
export function normalizeScopeKey(key: unknown, code = 'scope.invalid_key'): string {
  const problem = scopeKeyProblem(key);
  if (problem !== null) {
    const shown = typeof key === 'string' ? ` ${JSON.stringify(key.slice(0, 50))}` : '';
    throw new ValidationError(`scope${shown} is not a valid scope key: ${problem}`, { code });
  }
  return (key as string).normalize('NFC');
}
