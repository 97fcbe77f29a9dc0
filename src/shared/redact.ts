/**
 * Secret redaction for everything that leaves the process as text: log lines, error messages,
 * CLI output. Two layers: the exact values of configured secrets (registered at start-up), and
 * patterns that look like credentials even when we were never told about them (a Telegram bot
 * token in a URL, an Anthropic key, a bearer header, a password in a connection string).
 */

const REDACTED = '[REDACTED]';

const SECRET_PATTERNS: readonly RegExp[] = [
  // Telegram bot tokens: 123456789:AA... (35 chars after the colon), also inside /bot<token>/ URLs.
  /(?<!\d)\d{6,12}:[A-Za-z0-9_-]{30,}/g,
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
    if (value !== undefined && value.length >= 6) knownSecrets.add(value);
  }
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
