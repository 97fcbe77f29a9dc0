/**
 * Reading the errors of the `ollama` client, shared by the Ollama embedder and chat model: the
 * HTTP status of a `ResponseError`, and the names and codes along a `cause` chain (matched by
 * name: fetch's errors may come from another realm under some runners, so no instanceof).
 */
export function ollamaStatusOf(error: unknown): number | undefined {
  const status = (error as { status_code?: unknown } | null)?.status_code;
  return (error as Error)?.name === 'ResponseError' && typeof status === 'number' ? status : undefined;
}

export function errorNames(error: unknown): string[] {
  const names: string[] = [];
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 5; depth++) {
    const { name, code, cause } = current as { name?: unknown; code?: unknown; cause?: unknown };
    if (typeof name === 'string') names.push(name);
    if (typeof code === 'string') names.push(code);
    current = cause;
  }
  return names;
}
