/**
 * Credential shapes the maintained rule set (secret-rules.ts, secretlint's preset) does not know,
 * as data: each with where it comes from. Most are gitleaks' rules (config/gitleaks.toml of
 * github.com/gitleaks/gitleaks, MIT licence), with their trailing terminator groups dropped and no
 * word boundary required before the key (a key glued to other text, `MYKEY_sk-…` or `q=sk_live_…`,
 * is still a key). The rest are shapes this service meets itself: its Telegram bot token, its
 * Anthropic key in short test forms, Authorization headers, and passwords in URLs and settings.
 *
 * A pattern with a named group `secret` redacts only that group (the scheme and user of a URL, the
 * word `Bearer`, the name of a setting stay readable); otherwise the whole match goes.
 */

/** One credential shape. */
export interface SecretPattern {
  readonly id: string;
  /** Where the shape comes from. */
  readonly source: string;
  /** Global; with the `d` flag when it has a `secret` group. */
  readonly pattern: RegExp;
  /**
   * Lower-case strings every match contains (as gitleaks' `keywords`): the pattern runs only on a
   * text that holds one of them, so most texts cost a substring search instead of a regex scan.
   */
  readonly keywords?: readonly string[];
  /** Rejects a match that only looks like a credential (a number of tokens, a word). */
  readonly accept?: (secret: string) => boolean;
}

const GITLEAKS = 'gitleaks config/gitleaks.toml (MIT)';
const OWN = 'Nocturne';

/** Setting names whose value is a credential: `password=…`, `"api_key": "…"`, `DB_PASSWD: …`. */
const SECRET_SETTING = String.raw`(?:passw(?:or)?d|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token)`;
/** What every {@link SECRET_SETTING} contains. */
const SETTING_KEYWORDS = ['pass', 'pwd', 'secret', 'key', 'token'];
/** A setting's value: up to the next space, quote or separator. */
const SETTING_VALUE = String.raw`[^\s"'\x60&,;<>)\]}]`;
const MIN_ASSIGNED_LENGTH = 4;

/** A value after `=` is a credential unless it is only digits (`tokens=500`) or a placeholder word. */
function assignedValue(value: string): boolean {
  return value.length >= MIN_ASSIGNED_LENGTH && !/^\d+$/.test(value) && !/^(?:true|false|null|none|undefined|redacted|\[redacted\])$/i.test(value);
}

/** A value after `:` (also prose: "the secret: always") must look made, not written: a letter and a digit or symbol. */
function statedValue(value: string): boolean {
  return assignedValue(value) && /[A-Za-z]/.test(value) && /[^A-Za-z]/.test(value) && value.length >= 6;
}

/** The credential shapes, compiled once. */
export const SECRET_PATTERNS: readonly SecretPattern[] = [
  { id: 'stripe-access-token', source: GITLEAKS, keywords: ['_test_', '_live_', '_prod_'], pattern: /(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}/g },
  { id: 'gcp-api-key', source: GITLEAKS, keywords: ['aiza'], pattern: /AIza[\w-]{35}/g },
  { id: 'jwt', source: GITLEAKS, keywords: ['.ey'], pattern: /ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/\\_-]{17,}\.(?:[a-zA-Z0-9/\\_-]{10,}={0,2})?/g },
  {
    // gitleaks' private-key rule, to the END line or, for a key cut off in a paste, to the end of the text.
    id: 'private-key',
    source: GITLEAKS,
    keywords: ['private key'],
    pattern: /-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|$)/gi,
  },
  // A Telegram bot token, also inside /bot<token>/ URLs and URL-encoded (123456789%3AAA…).
  { id: 'telegram-bot-token', source: OWN, pattern: /(?<!\d)\d{6,12}(?::|%3A)[A-Za-z0-9_-]{30,}/gi },
  // `sk-` keys: at a word boundary any length-16 key; glued to other text only a named kind
  // (`sk-ant-`, `sk-proj-`) or a random-looking body, so "ask-questions-about-it" stays.
  { id: 'sk-key', source: OWN, keywords: ['sk-'], pattern: /\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}/g },
  { id: 'sk-key-named', source: OWN, keywords: ['sk-'], pattern: /sk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{16,}/g },
  {
    id: 'sk-key-random',
    source: OWN,
    keywords: ['sk-'],
    pattern: /sk-(?=[A-Za-z0-9_-]{0,64}\d)(?=[A-Za-z0-9_-]{0,64}[A-Z])(?=[A-Za-z0-9_-]{0,64}[a-z])[A-Za-z0-9_-]{20,}/g,
  },
  { id: 'authorization-header', source: OWN, keywords: ['bearer', 'basic'], pattern: /\b(?:Bearer|Basic)\s+(?<secret>[A-Za-z0-9._~+/=-]{8,})/dgi },
  {
    // scheme://user:password@host, the password up to the last '@' before the host, so one with
    // '/' or '@' in it (`pa/ss`, `p@ss`) goes whole.
    id: 'url-password',
    source: OWN,
    keywords: ['://'],
    pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^:/?#\s@"'<>]+:(?<secret>[^\s"'<>]+)@[^\s@/?#"'<>]*/dgi,
  },
  {
    // After gitleaks' generic-api-key: a setting named like a credential, assigned a value.
    id: 'secret-assignment',
    source: GITLEAKS,
    keywords: SETTING_KEYWORDS,
    pattern: new RegExp(String.raw`${SECRET_SETTING}[\w.-]{0,20}["']?\s*(?:=|:=|=>)\s*["'\x60]?(?<secret>${SETTING_VALUE}+)`, 'dgi'),
    accept: assignedValue,
  },
  {
    id: 'secret-statement',
    source: GITLEAKS,
    keywords: SETTING_KEYWORDS,
    pattern: new RegExp(String.raw`${SECRET_SETTING}[\w.-]{0,20}["']?\s*:\s*["'\x60]?(?<secret>${SETTING_VALUE}+)`, 'dgi'),
    accept: statedValue,
  },
];
