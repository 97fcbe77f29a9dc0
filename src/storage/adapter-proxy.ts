/**
 * Overrides a few methods of a driver adapter while everything else goes to the original, bound
 * to it (adapters keep private fields, so their methods must run with the original `this`).
 */
export function overrideMethods<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(inner, property, receiver) {
      if (Object.hasOwn(overrides, property)) return (overrides as Record<PropertyKey, unknown>)[property];
      const value = Reflect.get(inner, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(inner) : value;
    },
  });
}
