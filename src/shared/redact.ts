/**
 * Secret redaction for everything that leaves the process as text: log lines, error messages,
 * CLI output. Two layers: the exact values of configured secrets (registered at start-up), and
 * patterns that look like credentials even when we were never told about them (a Telegram bot
 * token in a URL, an Anthropic key, a bearer header, a password in a connection string).
 */

import { createHash, createHmac } from 'node:crypto';

const REDACTED = '[REDACTED]';

const SECRET_PATTERNS: readonly RegExp[] = [
  // Telegram bot tokens: 123456789:AA... (35 chars after the colon), also inside /bot<token>/ URLs,
  // and URL-encoded (123456789%3AAA...).
  /(?<!\d)\d{6,12}(?::|%3A)[A-Za-z0-9_-]{30,}/gi,
  // Anthropic and similar API keys.
  /\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}\b/g,
  // Authorization headers.
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  // Passwords in connection strings: scheme://user:password@host
  /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#\s@]+:)[^@/\s]+(@)/gi,
];

const knownSecrets = new Set<string>();

/**
 * Registers exact secret values (tokens, keys, passwords) so that they are redacted wherever
 * they appear. Short values are ignored: redacting "a" everywhere would destroy every message.
 */
export function registerSecrets(values: ReadonlyArray<string | undefined>): void {
  for (const value of values) {
    if (value === undefined || value.length < 6) continue;
    knownSecrets.add(value);
    for (const form of encodedForms(value)) knownSecrets.add(form);
  }
}

/**
 * The forms a secret takes inside upstream error text (issue 16, item 8): URL-encoded, and
 * base64 (standard and URL-safe alphabets) at each of the three alignments it can have inside a
 * longer base64 text (a Basic header of `user:key`, a JSON blob). For an alignment only the
 * characters that depend on the secret's bytes alone are kept; forms shorter than 12 characters
 * are dropped (too likely to occur by chance).
 */
function encodedForms(secret: string): string[] {
  const forms = new Set<string>();
  const encoded = encodeURIComponent(secret);
  if (encoded !== secret) forms.add(encoded);
  if (encoded.toLowerCase() !== encoded) forms.add(encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()));
  const bytes = Buffer.from(secret, 'utf8');
  for (const [offset, skip] of [[0, 0], [1, 2], [2, 3]] as const) {
    const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const whole = Math.floor((offset + bytes.length) / 3) * 4;
    const core = text.slice(skip, whole);
    if (core.length < 12) continue;
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms];
}

/** A run of base64 text long enough to hide a credential. */
const BASE64_RUN = /[A-Za-z0-9+/_-]{24,}={0,2}/g;
/** Credentials we recognise by their shape once decoded (the first two SECRET_PATTERNS, unanchored). */
const DECODED_SECRET = /\d{6,12}:[A-Za-z0-9_-]{30,}|sk-(?:ant-)?[A-Za-z0-9_-]{16,}/;

/** Replaces base64 runs that decode to a credential-shaped text (a token or key we were never told about). */
function redactEncodedShapes(text: string): string {
  return text.replace(BASE64_RUN, (run) => {
    for (const start of [0, 1, 2, 3]) {
      const decoded = Buffer.from(run.slice(start).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
      if (DECODED_SECRET.test(decoded)) return REDACTED;
    }
    return run;
  });
}

/** Forgets registered secrets (tests use this between cases). */
export function clearRegisteredSecrets(): void {
  knownSecrets.clear();
}

/** Returns `text` with every known secret and every credential-looking string replaced. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const secret of knownSecrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  if (out.length >= 24) out = redactEncodedShapes(out);
  for (const pattern of SECRET_PATTERNS) {
    out = out.replace(pattern, (match, ...groups) => {
      // The connection-string pattern keeps its scheme/user and '@' around the redaction.
      if (typeof groups[0] === 'string' && typeof groups[1] === 'string' && groups[1] === '@') {
        return `${groups[0]}${REDACTED}@`;
      }
      if (/^(Bearer|Basic)\s/i.test(match)) return `${match.split(/\s+/)[0]} ${REDACTED}`;
      return REDACTED;
    });
  }
  return out;
}

/** Deeply redacts every string inside a plain value (log metadata, error details). */
export function redactValue(value: unknown, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  if (value instanceof Error) {
    return { name: value.name, message: redactSecrets(value.message), stack: value.stack && redactSecrets(value.stack) };
  }
  if (Array.isArray(value)) return value.map((item) => redactValue(item, seen));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = redactField(key, inner, seen);
  return out;
}

const SECRET_KEY = /token|secret|password|passwd|api[-_]?key|authorization|cookie/i;

/** Redacts one named field: the whole value when the name says it is a secret. */
export function redactField(key: string, value: unknown, seen = new WeakSet<object>()): unknown {
  return SECRET_KEY.test(key) && typeof value === 'string' ? REDACTED : redactValue(value, seen);
}

// ---------------------------------------------------------------------------------------------
// Pseudonyms in logs (issue 16, item 8). With the store encrypted at rest, a log in plain text
// beside it must not say who talked to the bot: Telegram user and chat ids and scope keys (which
// carry them) are written as a keyed hash instead, the same for the same id as long as the key
// stays the same, so log lines remain correlatable without naming anyone.


let pseudonymKey: Buffer | undefined;

/** Turns pseudonyms on (with a key derived from the encryption key) or off (undefined). */
export function setLogPseudonymKey(encryptionKey: string | undefined): void {
  pseudonymKey = encryptionKey ? createHash('sha256').update(`nocturne log pseudonyms\0${encryptionKey}`).digest() : undefined;
}

/** `id#3f9a0c1b7e2d`: the keyed hash of an identifier. */
export function pseudonym(value: string | number): string {
  if (!pseudonymKey) return String(value);
  return `id#${createHmac('sha256', pseudonymKey).update(String(value)).digest('hex').slice(0, 12)}`;
}

/** Log fields that hold a person's or a chat's identifier. */
const IDENTITY_FIELD = /^(userId|chatId|fromId|senderId|ownerId|telegramUserId|scopeKey|user|chat|from)$/i;
/** Scope keys inside any text: `telegram:private:42`, `telegram:group:-100123`, `webhook:billing:ana`, `terminal:ana`. */
const SCOPE_KEY = /\b(?:telegram|webhook|terminal):[^\s"',;)\]}]+/g;

/** A log field with identifiers replaced by pseudonyms (unchanged while pseudonyms are off). */
export function pseudonymizeField(key: string, value: unknown): unknown {
  if (!pseudonymKey) return value;
  if (IDENTITY_FIELD.test(key) && (typeof value === 'string' || typeof value === 'number')) return pseudonym(value);
  return pseudonymizeValue(value, new WeakSet());
}

function pseudonymizeValue(value: unknown, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return value.replace(SCOPE_KEY, (found) => pseudonym(found));
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return value;
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => pseudonymizeValue(item, seen));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = IDENTITY_FIELD.test(key) && (typeof inner === 'string' || typeof inner === 'number') ? pseudonym(inner) : pseudonymizeValue(inner, seen);
  }
  return out;
}
