/**
 * Secret redaction for everything that leaves the process as text: log lines, error messages,
 * CLI output, exports, and every prompt sent to the model. Three layers: the exact values of the
 * service's own secrets (registered from the configuration at start-up), a maintained rule set of
 * credential shapes (secretlint's recommended preset, secret-rules.ts), and the shapes it does not
 * cover (gitleaks' Stripe, Google API key, JWT and private-key rules and this service's own,
 * secret-patterns.ts). Detection also reads the text with invisible characters removed and percent
 * escapes decoded (secret-normalize.ts), so a zero-width space inside a key or `q%3Dsk-…` does
 * not hide it.
 */

import { createHash, createHmac } from 'node:crypto';
import { needsNormalizing, normalizeForSecrets, originalSpan } from './secret-normalize';
import { SECRET_PATTERNS } from './secret-patterns';
import { findRuleSecrets } from './secret-rules';

const REDACTED = '[REDACTED]';
/** Shorter than any credential shape or registered secret: nothing to look for. */
const MIN_SECRET_TEXT = 6;

type Span = [number, number];

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
 * The forms a secret takes inside upstream error text: URL-encoded, and base64 (standard and
 * URL-safe alphabets) at each of the three alignments it can have inside a longer base64 text (a
 * Basic header of `user:key`, a JSON blob). For an alignment only the characters that depend on
 * the secret's bytes alone are kept; forms shorter than 12 characters are dropped (too likely to
 * occur by chance).
 */
function encodedForms(secret: string): string[] {
  const forms = new Set<string>();
  const encoded = encodeURIComponent(secret);
  if (encoded !== secret) forms.add(encoded);
  if (encoded.toLowerCase() !== encoded) forms.add(encoded.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()));
  const bytes = Buffer.from(secret, 'utf8');
  for (const [offset, skip] of [
    [0, 0],
    [1, 2],
    [2, 3],
  ] as const) {
    const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const whole = Math.floor((offset + bytes.length) / 3) * 4;
    const core = text.slice(skip, whole);
    if (core.length < 12) continue;
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms];
}

/** How long a run of base64 text must be to hide a credential. */
const MIN_BASE64_RUN = 24;
/** Credentials we recognise by their shape once decoded (a bot token, an `sk-` key). */
const DECODED_SECRET = /\d{6,12}:[A-Za-z0-9_-]{30,}|sk-(?:ant-)?[A-Za-z0-9_-]{16,}/;

function isBase64Char(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2b ||
    code === 0x2f ||
    code === 0x5f ||
    code === 0x2d
  );
}

/** Base64 runs that decode to a credential-shaped text (a token or key we were never told about). */
function encodedShapeSpans(text: string, spans: Span[]): void {
  // A scan by character codes: a regex for the runs tries every position of every word of prose.
  let from = 0;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && isBase64Char(text.charCodeAt(i))) continue;
    if (i - from >= MIN_BASE64_RUN) {
      let to = i;
      while (to < text.length && to < i + 2 && text[to] === '=') to++;
      const run = text.slice(from, to);
      for (const start of [0, 1, 2, 3]) {
        const decoded = Buffer.from(run.slice(start).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
        if (DECODED_SECRET.test(decoded)) {
          spans.push([from, to]);
          break;
        }
      }
    }
    from = i + 1;
  }
}

/** Where each registered secret occurs. */
function knownSecretSpans(text: string, spans: Span[]): void {
  for (const secret of knownSecrets) {
    for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + secret.length)) spans.push([at, at + secret.length]);
  }
}

/** `scheme://user:` at a rule's span: then only the password is redacted, as by the url-password pattern. */
const URL_USERINFO = new RegExp(SECRET_PATTERNS.find((p) => p.id === 'url-password')!.pattern.source, 'dyi');

/** Spans of the rule set, a URL with credentials narrowed to its password. */
function ruleSpans(text: string, spans: Span[]): void {
  for (const [from, to] of findRuleSecrets(text)) {
    URL_USERINFO.lastIndex = from;
    const url = URL_USERINFO.exec(text);
    const password = url?.indices?.groups?.secret;
    spans.push(password && password[1] <= to ? [password[0], password[1]] : [from, to]);
  }
}

/** Spans of the credential shapes of secret-patterns.ts. */
function patternSpans(text: string, spans: Span[]): void {
  const lower = text.toLowerCase();
  for (const { pattern, keywords, accept } of SECRET_PATTERNS) {
    if (keywords && !keywords.some((keyword) => lower.includes(keyword))) continue;
    for (const match of text.matchAll(pattern)) {
      const group = match.indices?.groups?.secret;
      const secret = match.groups?.secret ?? match[0];
      if (accept && !accept(secret)) continue;
      spans.push(group ? [group[0], group[1]] : [match.index, match.index + match[0].length]);
    }
  }
}

/** Every span of `text` that holds a secret, by every layer. */
function secretSpans(text: string): Span[] {
  const spans: Span[] = [];
  knownSecretSpans(text, spans);
  if (text.length >= MIN_BASE64_RUN) encodedShapeSpans(text, spans);
  ruleSpans(text, spans);
  patternSpans(text, spans);
  return spans;
}

/** Spans sorted and joined where they overlap or touch. */
function mergeSpans(spans: Span[]): Span[] {
  const merged: Span[] = [];
  for (const [from, to] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (to <= from) continue;
    const last = merged[merged.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/** `text` with each run of secret spans replaced by one marker. */
function replaceSpans(text: string, spans: Span[]): string {
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const [from, to] of mergeSpans(spans)) {
    out += `${text.slice(at, from)}${REDACTED}`;
    at = to;
  }
  return out + text.slice(at);
}

/** Forgets registered secrets (tests use this between cases). */
export function clearRegisteredSecrets(): void {
  knownSecrets.clear();
}

/**
 * Returns `text` with every registered secret and every credential-looking string replaced. A
 * text with invisible characters or percent escapes is read twice, as written and normalized, and
 * what the normalized reading finds is redacted in the original with the characters hidden in it.
 */
export function redactSecrets(text: string): string {
  if (text.length < MIN_SECRET_TEXT) return text;
  const spans = secretSpans(text);
  if (needsNormalizing(text)) {
    const normalized = normalizeForSecrets(text);
    for (const [from, to] of secretSpans(normalized.text)) spans.push(originalSpan(normalized, from, to));
  }
  return replaceSpans(text, spans);
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
