/**
 * How deep a parsed JSON value is nested, measured without recursion. JSON.parse accepts any
 * depth, but every recursive walk after it (normalizing, redacting, sizing, zod's z.json()) ends
 * in "Maximum call stack size exceeded" somewhere past a few thousand levels; callers bound the
 * depth with this check first, so a hostile value is refused as the input's error, not a crash.
 */

/** Nesting accepted in the free-form JSON of a message (metadata): far beyond any real use. */
export const MAX_JSON_DEPTH = 64;

/**
 * The path (keys and array indexes) of the first object or array nested deeper than `maxDepth`
 * levels in `value` (the value itself, when an object or array, is level 1), or null when none is.
 */
export function pathDeeperThan(value: unknown, maxDepth: number): Array<string | number> | null {
  const stack: Array<{ value: unknown; depth: number; path: Array<string | number> }> = [{ value, depth: 1, path: [] }];
  while (stack.length > 0) {
    const { value: current, depth, path } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > maxDepth) return path;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        const inner: unknown = current[i];
        if (inner !== null && typeof inner === 'object') stack.push({ value: inner, depth: depth + 1, path: [...path, i] });
      }
    } else {
      for (const [key, inner] of Object.entries(current as Record<string, unknown>)) {
        if (inner !== null && typeof inner === 'object') stack.push({ value: inner, depth: depth + 1, path: [...path, key] });
      }
    }
  }
  return null;
}
