/**
 * `/why N`: where item N (of the last /memories list or digest) came from — the messages it was
 * learned from (MemorySource → Episode), oldest first, with when and who said them.
 */
import { formatLocalMinute } from '../../memory/digests/digest';
import type { PrismaClient } from '../../storage/prisma';
import { excerpt, type CommandScope } from './command-scope';
import { lookupNumber, type NumberedLists } from './numbered-lists';

const MAX_EPISODES = 10;
const MAX_EXCERPT = 300;

/** The answer to `/why` without a number. */
export const WHY_USAGE = 'Which one? /why 3 shows the messages item 3 of your last /memories list (or digest) came from.';

/** The explanation of memory `memoryId`, shown as item `n`. */
export async function explainMemory(prisma: PrismaClient, scope: CommandScope, n: number, memoryId: string): Promise<string> {
  const memory = await prisma.memory.findFirst({ where: { scopeId: scope.id, id: memoryId }, select: { content: true, sourceType: true, validFrom: true } });
  if (!memory) return `Item ${n} has been forgotten since.`;
  const [total, sources] = await Promise.all([
    prisma.memorySource.count({ where: { scopeId: scope.id, memoryId } }),
    prisma.memorySource.findMany({
      where: { scopeId: scope.id, memoryId },
      select: { episode: { select: { timestamp: true, author: true, role: true, content: true } } },
      orderBy: { episode: { timestamp: 'asc' } },
      take: MAX_EPISODES,
    }),
  ]);
  const header = `${n}. ${excerpt(memory.content, MAX_EXCERPT)}`;
  if (total === 0) {
    return `${header}\n\nI have no record of the messages behind it (it was ${memory.sourceType}, ${formatLocalMinute(memory.validFrom, scope.timeZone)}; its messages may have been imported without sources).`;
  }
  const lines = sources.map(({ episode }) => {
    const who = episode.role === 'agent' ? 'me' : (episode.author ?? 'you');
    return `• ${formatLocalMinute(episode.timestamp, scope.timeZone)}, ${who}: “${excerpt(episode.content, MAX_EXCERPT)}”`;
  });
  const more = total > sources.length ? [`…and ${total - sources.length} more.`] : [];
  return [header, '', `I learned it from ${total === 1 ? 'this message' : `these ${total} messages`}:`, ...lines, ...more].join('\n');
}

/** `/why <argument>`: the usage, why the number means nothing, or the explanation. */
export async function answerWhy(prisma: PrismaClient, lists: NumberedLists, scope: CommandScope, argument: string): Promise<string> {
  const number = argument.trim().replace(/^#/, '');
  if (!/^\d{1,6}$/.test(number)) return WHY_USAGE;
  const n = Number(number);
  const found = await lookupNumber(prisma, lists, scope.id, n);
  if (!found.found) return found.explanation;
  return explainMemory(prisma, scope, n, found.memoryId);
}
