/**
 * Rows of a scope export (`nocturne.scope-export`) as the exporter writes them, for tests that
 * build export documents by hand: every field present, row `i` timed `i` minutes after 2025-01-01.
 * Callers override what their test is about.
 */
export const exportTime = (i: number): string => new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();

export function exportEpisode(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `ep-${i}`,
    channel: 'import',
    role: 'user',
    author: 'ana',
    content: `message ${i}`,
    summary: null,
    timestamp: exportTime(i),
    conversationId: null,
    turn: null,
    externalId: `x-${i}`,
    metadata: null,
    importance: 0.5,
    importanceSource: 'default',
    consolidated: false,
    consolidationAttempts: 0,
    consolidatedAt: null,
    contentHash: `hash-${i}`,
    createdAt: exportTime(i),
    tags: [],
    ...extra,
  };
}

export function exportMemory(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `mem-${i}`,
    category: 'fact',
    content: `fact ${i}`,
    confidence: 0.8,
    importance: 0.5,
    active: true,
    reinforcementCount: 1,
    lastReinforcedAt: exportTime(i),
    sourceType: 'episode',
    sourceTrust: 1,
    validFrom: exportTime(i),
    validTo: null,
    supersededById: null,
    linkedAt: null,
    decaySteps: 0,
    accessCount: 0,
    lastAccessedAt: null,
    createdAt: exportTime(i),
    updatedAt: exportTime(i),
    sourceEpisodeIds: [`ep-${i}`],
    ...extra,
  };
}

/** The scope row of an export: an imported private scope, last spoken to at minute `lastMinute`. */
export function exportScopeRow(id: string, key: string, lastMinute = 0): Record<string, unknown> {
  return {
    id,
    key,
    channel: 'import',
    kind: 'private',
    title: null,
    ownerId: null,
    timezone: null,
    paused: false,
    settings: null,
    lastMessageAt: exportTime(lastMinute),
    createdAt: exportTime(0),
    updatedAt: exportTime(lastMinute),
  };
}
