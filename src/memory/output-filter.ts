/**
 * The one filter every output of stored text passes through: chat commands, CLI, admin API,
 * memory tools, exports and model prompts. Messages are stored as the person wrote them (a key
 * pasted into a chat stays in its episode, so forgetting and exports stay exact), and what leaves
 * the store for a reader is shown through {@link showStored}, which replaces the service's own
 * secrets and anything that looks like a credential with `[REDACTED]`.
 *
 * Keeping the rule in one function means a new output path gets it by calling the domain's read
 * services, which apply it, instead of remembering to redact.
 */
import { redactSecrets } from '../shared/redact';

/** Stored text as it may be shown to anyone: secrets replaced. */
export function showStored(text: string): string {
  return redactSecrets(text);
}

/** A stored value (a row, a JSON document) with every string in it shown through {@link showStored}. */
export function showStoredValue<T>(value: T): T {
  return showDeep(value) as T;
}

/** Strings filtered; dates, numbers and other non-plain values kept as they are. */
function showDeep(value: unknown): unknown {
  if (typeof value === 'string') return showStored(value);
  if (Array.isArray(value)) return value.map(showDeep);
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, showDeep(inner)]));
}
