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
  return showDeep(value, new Map(), NO_KEYS) as T;
}

/**
 * Keys of a search result that hold the service's own identifiers, not stored text: its id (and
 * its source episodes' ids, UUIDs the service made) and its kind.
 */
const RESULT_IDENTIFIERS: ReadonlySet<string> = new Set(['id', 'kind']);
const NO_KEYS: ReadonlySet<string> = new Set();

/**
 * Search results as they may be shown: like {@link showStoredValue}, but the service's own
 * identifiers ({@link RESULT_IDENTIFIERS}) pass as they are. Why: the filter scans a string for
 * dozens of credential shapes, and a UUID, hex and dashes, is among the costliest strings to scan
 * (about three times a chat turn); a reply's context shows ~70 results, every one with an id.
 * Any other string, including a field added later, is filtered.
 */
export function showSearchResults<T>(results: T): T {
  return showDeep(results, new Map(), RESULT_IDENTIFIERS) as T;
}

/**
 * Strings filtered; dates, numbers and other non-plain values kept as they are. `shown` holds the
 * strings already filtered in this value (the results of one search share their authors and
 * conversations); values under a key of `keep` are kept as they are.
 */
function showDeep(value: unknown, shown: Map<string, string>, keep: ReadonlySet<string>): unknown {
  if (typeof value === 'string') {
    let out = shown.get(value);
    if (out === undefined) shown.set(value, (out = showStored(value)));
    return out;
  }
  if (Array.isArray(value)) return value.map((item) => showDeep(item, shown, keep));
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [key, keep.has(key) && typeof inner === 'string' ? inner : showDeep(inner, shown, keep)]),
  );
}
