/**
 * The JSON Schema a structured answer is constrained to, made from the zod schema it is validated
 * against, in the one dialect both providers accept.
 *
 * Anthropic's structured outputs take a subset of JSON Schema: every object closed
 * (`additionalProperties: false`), no numeric or length bounds, no `pattern`, only a few string
 * formats. Ollama takes more, but gains nothing from the rest (its grammar ignores bounds too), so
 * one schema serves both and a change to the subset is made here only. Whatever is dropped stays
 * in force: zod validates every answer afterwards, and a bound the schema could not carry is
 * written into the property's `description`, so the model still reads it.
 */
import { z } from 'zod';
import type { JsonObjectSchema } from './language-model';

type Node = Record<string, unknown>;

/** Keywords dropped and, where the model should know the bound, said in words instead. */
const BOUNDS: Readonly<Record<string, (value: unknown) => string | undefined>> = {
  minimum: (v) => `at least ${String(v)}`,
  exclusiveMinimum: (v) => `more than ${String(v)}`,
  maximum: (v) => `at most ${String(v)}`,
  exclusiveMaximum: (v) => `less than ${String(v)}`,
  multipleOf: (v) => `a multiple of ${String(v)}`,
  minLength: (v) => (Number(v) > 0 ? `at least ${String(v)} character${Number(v) === 1 ? '' : 's'}` : undefined),
  maxLength: (v) => `at most ${String(v)} characters`,
  maxItems: (v) => `at most ${String(v)} items`,
  pattern: () => undefined,
  default: () => undefined,
  $schema: () => undefined,
  $id: () => undefined,
};

/** String formats Anthropic accepts; others are dropped (zod still checks them). */
const FORMATS: ReadonlySet<string> = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid']);

/** Keywords whose value is one schema, a list of them, or a map of them. */
const ONE = ['items', 'not', 'additionalItems', 'contains'];
const MANY = ['anyOf', 'allOf', 'prefixItems'];
const MAP = ['properties', '$defs', 'definitions'];

/** A map with keys of the model's choosing (`z.record`): the subset has no way to say it. */
class OpenMap extends Error {}

function adjust(input: unknown): unknown {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  const node = input as Node;
  const extra = node.additionalProperties;
  if ((extra !== undefined && extra !== false) || node.propertyNames !== undefined || node.patternProperties !== undefined) throw new OpenMap();
  const out: Node = {};
  const said: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    const bound = BOUNDS[key];
    if (bound) {
      const words = bound(value);
      if (words) said.push(words);
    } else if (key === 'minItems') {
      // Only 0 and 1 are accepted.
      if (Number(value) <= 1) out.minItems = value;
      else said.push(`at least ${String(value)} items`);
    } else if (key === 'format') {
      if (typeof value === 'string' && FORMATS.has(value)) out.format = value;
    } else if (key === 'oneOf') {
      // Exactly-one is not offered; any-of is what the zod union accepts anyway.
      out.anyOf = (value as unknown[]).map(adjust);
    } else if (ONE.includes(key)) {
      out[key] = adjust(value);
    } else if (MANY.includes(key)) {
      out[key] = (value as unknown[]).map(adjust);
    } else if (MAP.includes(key)) {
      out[key] = Object.fromEntries(Object.entries(value as Node).map(([name, schema]) => [name, adjust(schema)]));
    } else {
      out[key] = value;
    }
  }
  // A list of types ("number or string") as alternatives, the form every dialect reads alike.
  if (Array.isArray(out.type)) {
    const types = out.type as string[];
    delete out.type;
    const alternatives = types.map((type) => ({ type }));
    out.anyOf = out.anyOf ? [...(out.anyOf as unknown[]), ...alternatives] : alternatives;
  }
  if (out.type === 'object' || out.properties !== undefined) out.additionalProperties = false;
  if (said.length > 0) out.description = [out.description, `(${said.join(', ')})`].filter(Boolean).join(' ');
  return out;
}

const cache = new WeakMap<z.ZodType, JsonObjectSchema | null>();

/**
 * The answer schema for `schema`: what a model produces is zod's input, so the input side is
 * described (transforms are not the model's business). `undefined` when the top level is not an
 * object (both providers want one there), when it holds a map with keys of the model's choosing
 * (closing it would forbid every key) or when zod cannot describe it: that answer is then asked
 * for in the prompt only. Memoized per schema.
 */
export function answerSchemaOf(schema: z.ZodType): JsonObjectSchema | undefined {
  const known = cache.get(schema);
  if (known !== undefined) return known ?? undefined;
  let made: JsonObjectSchema | null = null;
  try {
    const json = adjust(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as Node;
    if (json.type === 'object') made = json as unknown as JsonObjectSchema;
  } catch {
    // An open map, or not describable at all (a cycle zod refuses, say): no schema is sent.
  }
  cache.set(schema, made);
  return made ?? undefined;
}
