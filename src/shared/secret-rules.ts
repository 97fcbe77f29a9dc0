/**
 * The maintained rule set of secret shapes: secretlint's recommended preset
 * (`@secretlint/secretlint-rule-preset-recommend`, MIT, pinned in package.json). Its rules know
 * the shapes of AWS, GitHub, Slack, npm, OpenAI, Anthropic, SendGrid, Shopify, Linear and
 * 1Password credentials, PEM private keys and database and basic-auth URLs, and are kept current
 * by the secretlint project as providers change their formats; a new version is one line in
 * package.json (the 13.x line needs Node 22: 11.7.1 is the last for Node 20).
 *
 * Secretlint is a linter with an asynchronous engine; redaction runs inside synchronous code (log
 * formatting, error construction). So the engine is not used: each rule's `file` handler, which
 * scans the text synchronously and reports ranges, is called directly with the smallest context
 * a rule uses (`createTranslator`, `report`). Left out: the comment-directive rule (a
 * `secretlint-disable` comment in a message must not switch redaction off) and the GCP rule
 * (it reads `.p12`/`.json` files by path; a text has none).
 */
import { rules as presetRules } from '@secretlint/secretlint-rule-preset-recommend';

/** What this module needs of a secretlint rule (the package's own types live in a package not installed). */
interface RuleCreator {
  readonly meta: { readonly id: string };
  create(context: RuleContext, options: Record<string, unknown>): { file?: (source: RuleSource) => unknown };
}
interface RuleContext {
  createTranslator(messages: unknown): (id: string, props?: unknown) => string;
  report(descriptor: { message: string; range: readonly [number, number] }): void;
  ignore(descriptor: unknown): void;
}
interface RuleSource {
  readonly content: string;
  readonly contentType: 'text';
  readonly ext: string;
  readonly filePath: undefined;
}

/** Rules left out, and why (see the file comment). */
const SKIPPED_RULES: ReadonlySet<string> = new Set(['@secretlint/secretlint-rule-filter-comments', '@secretlint/secretlint-rule-gcp']);

/**
 * Options per rule. The AWS rule scans for access key ids (`AKIA…`) only when asked: a linter
 * avoids the noise of ids in infrastructure code, a chat redacts them.
 */
const RULE_OPTIONS: Readonly<Record<string, Record<string, unknown>>> = {
  '@secretlint/secretlint-rule-aws': { enableIDScanRule: true },
};

/** Characters a token may continue with past the range a rule reported. */
const TOKEN_CHAR = /[A-Za-z0-9+/=_\-.~]/;

let reported: Array<[number, number]> = [];
const context: RuleContext = {
  createTranslator: () => (id) => id,
  report: ({ range }) => void reported.push([range[0], range[1]]),
  ignore: () => undefined,
};

/** The preset's rules, created once (each keeps its compiled patterns). */
const scanners = (presetRules as unknown as readonly RuleCreator[])
  .filter((rule) => !SKIPPED_RULES.has(rule.meta.id))
  .map((rule) => rule.create(context, RULE_OPTIONS[rule.meta.id] ?? {}))
  .flatMap((handlers) => (handlers.file ? [handlers.file] : []));

/** How many rules of the preset run (reported in docs and tests). */
export const SECRET_RULE_COUNT = scanners.length;

/**
 * Spans `[from, to)` of `text` that a rule of the preset reports as a credential. A reported range
 * is widened to the end of the token it starts in: some rules report a range of the key's length
 * starting at the setting's name (`aws_secret_access_key = …`), which would leave the key's tail.
 */
export function findRuleSecrets(text: string): Array<[number, number]> {
  reported = [];
  const source: RuleSource = { content: text, contentType: 'text', ext: '', filePath: undefined };
  for (const scan of scanners) scan(source);
  const spans = reported;
  reported = [];
  return spans.map(([from, to]) => {
    let end = Math.max(from, Math.min(to, text.length));
    while (end < text.length && TOKEN_CHAR.test(text[end] as string)) end += 1;
    return [from, end] as [number, number];
  });
}
