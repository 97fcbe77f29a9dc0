/**
 * Fake credentials of every kind a person might paste, generated from a seed to match each
 * provider's published format (prefix, alphabet, length): none is a real key. Each case has the
 * text as pasted (the key in context, sometimes disguised) and the needle: the secret itself,
 * whose characters must not appear in any output.
 */
import { createRng, type Rng } from '../chaos/chaos-support';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = `${UPPER}${LOWER}${DIGITS}`;
const BASE64 = `${ALNUM}+/`;
const BASE64URL = `${ALNUM}_-`;
const ZERO_WIDTH_SPACE = '\u200B';
const SOFT_HYPHEN = '\u00AD';
/** A run of this many characters of a secret found in an output counts as shown (shorter runs occur by chance). */
export const SHOWN_RUN = 8;

export interface SecretCase {
  readonly kind: string;
  /** The message as the person sends it. */
  readonly pasted: string;
  /** The secret as it must not reappear (without any invisible characters hidden in the paste). */
  readonly needle: string;
}

function chars(rng: Rng, alphabet: string, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += alphabet[Math.floor(rng.next() * alphabet.length)];
  return out;
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** A PEM private key block with a random body of `lines` 64-character lines (starts with `MII`, like a DER sequence). */
function pemKey(rng: Rng, lines: number): { block: string; body: string } {
  const body = [`MIIEow${chars(rng, BASE64, 58)}`, ...Array.from({ length: lines - 1 }, () => chars(rng, BASE64, 64))];
  return { block: `-----BEGIN RSA PRIVATE KEY-----\n${body.join('\n')}\n-----END RSA PRIVATE KEY-----`, body: body.join('') };
}

/** `value` with `mark` after every `every` characters. */
function sprinkle(value: string, mark: string, every: number): string {
  return value.replace(new RegExp(`(.{${every}})`, 'g'), `$1${mark}`);
}

/** One case per kind of pasted secret the filter must catch. */
export function secretCorpus(seed: number): SecretCase[] {
  const rng = createRng(seed);
  const anthropic = () => `sk-ant-api03-${chars(rng, BASE64URL, 93)}AA`;
  const ghp = `ghp_${chars(rng, ALNUM, 36)}`;
  const githubPat = `github_pat_11${chars(rng, UPPER + DIGITS, 20)}_${chars(rng, ALNUM, 59)}`;
  const awsId = `AKIA${chars(rng, `${UPPER}234567`, 16)}`;
  const awsSecret = chars(rng, BASE64, 40);
  const slack = `xoxb-${chars(rng, DIGITS, 12)}-${chars(rng, DIGITS, 13)}-${chars(rng, ALNUM, 24)}`;
  const stripe = `sk_live_${chars(rng, ALNUM, 24)}`;
  const google = `AIza${chars(rng, `${ALNUM}_-`, 35)}`;
  const pem = pemKey(rng, 6);
  const jwt = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({ sub: chars(rng, DIGITS, 10), name: 'Ana', iat: 1_700_000_000 })}.${chars(rng, BASE64URL, 43)}`;
  const password = `${chars(rng, ALNUM, 10)}!${chars(rng, DIGITS, 3)}`;
  const glued = anthropic();
  const prefixed = anthropic();
  const hidden = anthropic();
  const hiddenGhp = `ghp_${chars(rng, ALNUM, 36)}`;
  const urlSlash = `${chars(rng, ALNUM, 6)}/${chars(rng, ALNUM, 8)}`;
  const urlAt = `${chars(rng, ALNUM, 7)}@${chars(rng, ALNUM, 7)}`;
  return [
    { kind: 'github classic token', pasted: `my token is ${ghp} for the CI`, needle: ghp },
    { kind: 'github fine-grained token', pasted: `use ${githubPat} to push`, needle: githubPat },
    { kind: 'aws access key id', pasted: `AWS_ACCESS_KEY_ID=${awsId}`, needle: awsId },
    { kind: 'aws secret access key', pasted: `aws_secret_access_key = ${awsSecret}`, needle: awsSecret },
    { kind: 'slack bot token', pasted: `the bot uses ${slack}`, needle: slack },
    { kind: 'stripe live key', pasted: `billing key ${stripe} do not share`, needle: stripe },
    { kind: 'google api key', pasted: `maps key: ${google}`, needle: google },
    { kind: 'pem private key', pasted: `here is the server key\n${pem.block}\nthanks`, needle: pem.body },
    { kind: 'bare jwt', pasted: `session ${jwt}`, needle: jwt },
    { kind: 'password assignment', pasted: `login with password=${password} tomorrow`, needle: password },
    { kind: 'sk- key after a percent escape', pasted: `https://example.com/cb?q%3D${glued}&x=1`, needle: glued },
    { kind: 'sk- key glued to a name', pasted: `MYKEY_${prefixed}`, needle: prefixed },
    { kind: 'zero-width spaces inside a key', pasted: `key ${sprinkle(hidden, ZERO_WIDTH_SPACE, 20)} ok`, needle: hidden },
    { kind: 'soft hyphens inside a token', pasted: `token ${sprinkle(hiddenGhp, SOFT_HYPHEN, 10)}`, needle: hiddenGhp },
    { kind: 'url password with a slash', pasted: `clone https://ana:${urlSlash}@git.example.com/repo.git`, needle: urlSlash },
    { kind: 'url password with an at sign', pasted: `db at postgres://ana:${urlAt}@db.example.com:5432/app`, needle: urlAt },
  ];
}

/** The service's own secrets: random values of no provider's shape, so only their registration can find them. */
export function ownSecrets(seed: number): { adminToken: string; webhookSecret: string; botToken: string; anthropicKey: string; encryptionKey: string } {
  const rng = createRng(seed);
  return {
    adminToken: `adm${chars(rng, LOWER + DIGITS, 29)}`,
    webhookSecret: `whk${chars(rng, LOWER + DIGITS, 29)}`,
    botToken: `${chars(rng, DIGITS, 10)}:AA${chars(rng, `${ALNUM}_-`, 33)}`,
    anthropicKey: `key${chars(rng, LOWER + DIGITS, 29)}`,
    encryptionKey: `enc${chars(rng, LOWER + DIGITS, 29)}`,
  };
}

/** Removes the characters a paste can hide in a key, so a needle is found however it was disguised. */
export function visible(text: string): string {
  return text.replace(/[\u00AD\u200B-\u200D\u2060-\u2064\uFEFF]/g, '');
}

/**
 * How many characters of `needle` an output shows: those covered by a run of {@link SHOWN_RUN}
 * characters of the needle found in the output (read without invisible characters, and with
 * percent escapes decoded where they decode).
 */
export function charactersShown(needle: string, output: string): number {
  const readable = visible(output);
  let decoded = readable;
  try {
    decoded = decodeURIComponent(readable);
  } catch {
    // A malformed escape: read as written.
  }
  const covered = new Array<boolean>(needle.length).fill(false);
  for (let i = 0; i + SHOWN_RUN <= needle.length; i++) {
    const run = needle.slice(i, i + SHOWN_RUN);
    if (readable.includes(run) || decoded.includes(run)) covered.fill(true, i, i + SHOWN_RUN);
  }
  return covered.filter(Boolean).length;
}
