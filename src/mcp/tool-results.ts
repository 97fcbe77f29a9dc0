/**
 * How MCP tools answer: a value as filtered JSON text, or a refusal the client can show; an
 * unexpected failure is logged here and reaches the client without detail.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { showStored, showStoredValue } from '../memory/output-filter';
import { AppError } from '../shared/errors';
import type { Logger } from '../shared/logger';

/** A tool's answer: the value as JSON text, filtered. */
export function jsonResult(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: showStored(JSON.stringify(showStoredValue(value), null, 2)) }] };
}

/** A refusal the client can show as it is; nothing was changed. */
export function errorResult(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: showStored(message) }] };
}

/**
 * Runs a tool's work: a user error (bad input, not found, a refusal) comes back as the tool's
 * error with its message; anything else is logged and answered without detail (no stack, path or
 * stored text reaches the client).
 */
export async function guarded(log: Logger, tool: string, work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError && error.category === 'user') return errorResult(error.message);
    log.error('MCP tool failed', { tool, error });
    return errorResult(`${tool} failed on the server; nothing was changed by this call`);
  }
}
