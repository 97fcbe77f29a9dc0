/**
 * `/why N`: where item N (of the last /memories list or digest) came from — the messages it was
 * learned from, oldest first, with when and who said them, and what it said before when it was
 * corrected or revised (its earlier versions, oldest first). The catalog filters every text it
 * returns, so a secret pasted into the chat is not shown back.
 */
import { formatLocalMinute } from '../../memory/digests/digest';
import type { MemoryCatalog, MemoryExplanation } from '../../memory/memories/memory-catalog';
import { excerpt, type CommandScope } from './command-scope';
import { plural } from '../../shared/plural';
import { lookupNumber, type NumberSources } from './numbered-lists';

const MAX_EPISODES = 10;
const MAX_EXCERPT = 300;

/** The answer to `/why` without a number. */
export const WHY_USAGE = 'Which one? /why 3 shows the messages item 3 of your last /memories list (or digest) came from.';

/** What `/why` reads: the numbers' sources, and the catalog that explains a memory (its texts filtered). */
export interface WhyServices extends NumberSources {
  readonly catalog: Pick<MemoryCatalog, 'explain'>;
}

/** What a corrected memory said before, one line per earlier version (empty when it has none). */
function earlierLines(earlier: MemoryExplanation['earlier'], timeZone: string): string {
  if (earlier.length === 0) return '';
  const lines = earlier.map((v) => `• until ${formatLocalMinute(v.validTo ?? v.validFrom, timeZone)}: “${excerpt(v.content, MAX_EXCERPT)}”`);
  return ['', '', 'Before, it said:', ...lines].join('\n');
}

/** The explanation of memory `memoryId`, shown as item `n`. */
export async function explainMemory(catalog: Pick<MemoryCatalog, 'explain'>, scope: CommandScope, n: number, memoryId: string): Promise<string> {
  const memory = await catalog.explain(scope.id, memoryId, MAX_EPISODES);
  if (!memory) return `Item ${n} has been forgotten since.`;
  const total = memory.sourceCount;
  const header = `${n}. ${excerpt(memory.content, MAX_EXCERPT)}`;
  const history = earlierLines(memory.earlier, scope.timeZone);
  if (total === 0) {
    return `${header}${history}\n\nI have no record of the messages behind it (it was ${memory.sourceType}, ${formatLocalMinute(memory.validFrom, scope.timeZone)}; its messages may have been imported without sources).`;
  }
  const lines = memory.sources.map((episode) => {
    const who = episode.role === 'agent' ? 'me' : (episode.author ?? 'you');
    return `• ${formatLocalMinute(episode.timestamp, scope.timeZone)}, ${who}: “${excerpt(episode.content, MAX_EXCERPT)}”`;
  });
  const more = total > memory.sources.length ? [`…and ${total - memory.sources.length} more.`] : [];
  return [header + history, '', `I learned it from ${total === 1 ? 'this message' : `these ${plural(total, 'message')}`}:`, ...lines, ...more].join('\n');
}

/** `/why <argument>`: the usage, why the number means nothing, or the explanation. */
export async function answerWhy(services: WhyServices, scope: CommandScope, argument: string): Promise<string> {
  const number = argument.trim().replace(/^#/, '');
  if (!/^\d{1,6}$/.test(number)) return WHY_USAGE;
  const n = Number(number);
  const found = await lookupNumber(services, scope.id, n);
  if (!found.found) return found.explanation;
  return explainMemory(services.catalog, scope, n, found.memoryId);
}
