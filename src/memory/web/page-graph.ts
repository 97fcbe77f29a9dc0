/**
 * The memory page's graph and the people and things on it: entities (the profiles sleep keeps of
 * the people, pets, places and things the person talks about) and current memories as nodes; the
 * links the dreaming phase made between memories, and an entity's tie to a memory that names it
 * (its name in the memory's text) or that was learned from a message it was observed in.
 *
 * For a member of a group who is not its administrator, only memories in their reach and the
 * entities tied to them are shown. Every text passes the output filter.
 */
import type { PrismaClient } from '../../storage/prisma';
import { KNOWLEDGE_ONLY } from '../memories/categories';
import { aboutSpeaker } from '../memories/speakers';
import { showStoredValue } from '../output-filter';
import { relationshipOf } from '../profiles/relationship';
import { SOUL_OBSERVATIONS_PER_PERSON } from '../profiles/soul-render';
import type { PageReach } from './page-memories';

export interface GraphNode {
  readonly id: string;
  readonly kind: 'entity' | 'memory';
  readonly label: string;
  /** A memory's category, or an entity's kind (person, pet, place, ...). */
  readonly category?: string;
}

export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  /** A memory link's kind (related, contradicts, ...), or `mentions` from an entity to a memory. */
  readonly kind: string;
}

/** An entity's profile on the page. */
export interface EntityProfile {
  readonly id: string;
  readonly name: string;
  readonly kind: string;
  /** Its attributes and how close the person is to it, in one line each. */
  readonly summary: string;
  readonly memories: ReadonlyArray<{ id: string; content: string; category: string }>;
}

/** Most memory nodes on a graph (the most confident): a phone draws a few hundred nodes well. */
export const MAX_GRAPH_MEMORIES = 300;

export interface PageGraph {
  graph(reach: PageReach): Promise<{ nodes: GraphNode[]; edges: GraphEdge[] }>;
  /** One entity of the reach, or null. */
  entity(reach: PageReach, entityId: string): Promise<EntityProfile | null>;
}

type MemoryRow = { id: string; content: string; category: string };
type EntityRow = { id: string; name: string; kind: string; observations: Array<{ episodeId: string | null }> };

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whether `memory` names `entity` (its name as a word) or came from a message the entity was observed in. */
function ties(entity: EntityRow, memory: MemoryRow, sources: ReadonlyMap<string, ReadonlySet<string>>): boolean {
  if (entity.name.trim().length > 1 && new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(entity.name.trim())}($|[^\\p{L}\\p{N}])`, 'iu').test(memory.content))
    return true;
  const episodes = sources.get(memory.id);
  return !!episodes && entity.observations.some((o) => o.episodeId !== null && episodes.has(o.episodeId));
}

export function createPageGraph(deps: { prisma: PrismaClient }): PageGraph {
  const { prisma } = deps;

  async function read(reach: PageReach) {
    const memories: MemoryRow[] = await prisma.memory.findMany({
      where: {
        scopeId: reach.scopeId,
        active: true,
        validTo: null,
        ...KNOWLEDGE_ONLY,
        ...(reach.speakerId === undefined ? {} : { AND: [aboutSpeaker(reach.speakerId)] }),
      },
      orderBy: [{ confidence: 'desc' }, { id: 'asc' }],
      take: MAX_GRAPH_MEMORIES,
      select: { id: true, content: true, category: true },
    });
    const ids = memories.map((m) => m.id);
    const [entities, links, sourceRows] = await Promise.all([
      prisma.entity.findMany({
        where: { scopeId: reach.scopeId },
        orderBy: { name: 'asc' },
        select: { id: true, name: true, kind: true, observations: { select: { episodeId: true } } },
      }),
      prisma.memoryLink.findMany({
        where: { scopeId: reach.scopeId, fromId: { in: ids }, toId: { in: ids } },
        select: { fromId: true, toId: true, kind: true },
      }),
      prisma.memorySource.findMany({ where: { scopeId: reach.scopeId, memoryId: { in: ids } }, select: { memoryId: true, episodeId: true } }),
    ]);
    const sources = new Map<string, Set<string>>();
    for (const s of sourceRows) sources.set(s.memoryId, (sources.get(s.memoryId) ?? new Set()).add(s.episodeId));
    const tied = entities.map((e) => ({ entity: e, memories: memories.filter((m) => ties(e, m, sources)) }));
    // A member sees the people and things of their own memories only.
    const shown = reach.speakerId === undefined ? tied : tied.filter((t) => t.memories.length > 0);
    return { memories, links, entities: shown };
  }

  return {
    async graph(reach) {
      const { memories, links, entities } = await read(reach);
      const nodes: GraphNode[] = [
        ...entities.map((t) => ({ id: t.entity.id, kind: 'entity' as const, label: t.entity.name, category: t.entity.kind })),
        ...memories.map((m) => ({ id: m.id, kind: 'memory' as const, label: m.content, category: m.category })),
      ];
      const edges: GraphEdge[] = [
        ...links.map((l) => ({ from: l.fromId, to: l.toId, kind: l.kind })),
        ...entities.flatMap((t) => t.memories.map((m) => ({ from: t.entity.id, to: m.id, kind: 'mentions' }))),
      ];
      return showStoredValue({ nodes, edges });
    },

    async entity(reach, entityId) {
      const row = await prisma.entity.findFirst({
        where: { scopeId: reach.scopeId, id: entityId },
        select: { id: true, attributes: true, favorability: true },
      });
      if (!row) return null;
      const { entities } = await read(reach);
      const found = entities.find((t) => t.entity.id === entityId);
      if (!found) return null;
      const attributes = row.attributes && typeof row.attributes === 'object' && !Array.isArray(row.attributes) ? Object.entries(row.attributes) : [];
      // The same relationship the soul shows: family by the relation, the other names or the owner's words.
      const text = (key: string) => {
        const value = attributes.find(([k]) => k === key)?.[1];
        return typeof value === 'string' ? value : '';
      };
      const observations = await prisma.entityObservation.findMany({
        where: { scopeId: reach.scopeId, entityId },
        orderBy: { createdAt: 'desc' },
        take: SOUL_OBSERVATIONS_PER_PERSON,
        select: { content: true },
      });
      const relationship = relationshipOf(
        row.favorability,
        [text('relation'), ...text('aliases').split(',')],
        observations.map((o) => o.content),
      );
      const summary = [
        ...attributes.map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`),
        `relationship: ${relationship}`,
      ].join('\n');
      return showStoredValue({
        id: found.entity.id,
        name: found.entity.name,
        kind: found.entity.kind,
        summary,
        memories: found.memories.map((m) => ({ id: m.id, content: m.content, category: m.category })),
      });
    },
  };
}
