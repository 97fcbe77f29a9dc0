/**
 * The Markdown export: seed 002's memory files, for a person to read (or to hand to another agent
 * that keeps its memory in files).
 *
 *   MEMORY.md              long-term memory: the soul, then every current memory by category,
 *                          with its confidence and the dates it was learned from
 *   memory/YYYY-MM-DD.md   one daily log per day with activity: that day's conversation as a
 *                          transcript, and what was learned that day
 *
 * Rendered from a {@link ScopeExport} (the JSON export is the source of truth; this is a view of
 * it), so it is pure and deterministic. Days and times are in the scope's time zone. One way only:
 * Markdown is not imported back (the JSON export is the format that round-trips).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { compareStrings, type ExportedEpisode, type ExportedMemory, type ScopeExport } from './scope-document';
import { plural } from '../shared/plural';
import { scopeTimeZone } from '../memory/scopes/scope-policy';

/** Options of {@link renderMarkdownExport}. */
export interface MarkdownExportOptions {
  /** Used when the scope has no time zone of its own (the service default). */
  readonly defaultTimeZone: string;
}

/** Relative path (`MEMORY.md`, `memory/2024-02-01.md`) -> file text, MEMORY.md first, days in order. */
export type MarkdownFiles = ReadonlyMap<string, string>;

const CATEGORY_TITLES: Readonly<Record<string, string>> = {
  fact: 'Facts',
  preference: 'Preferences',
  pattern: 'Patterns',
  routine: 'Routines',
  schedule: 'Schedule',
  goal: 'Goals',
  project: 'Projects',
  relationship: 'Relationships',
  interest: 'Interests',
  skill: 'Skills',
  style: 'Communication style',
  emotional: 'Emotional',
};

function categoryTitle(category: string): string {
  return CATEGORY_TITLES[category] ?? `${category.charAt(0).toUpperCase()}${category.slice(1)}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Local calendar day and time of day in a time zone. */
function clock(timeZone: string) {
  const day = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
  const time = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  return {
    day: (iso: string): string => day.format(new Date(iso)),
    time: (iso: string): string => time.format(new Date(iso)),
  };
}

function isCurrent(m: ExportedMemory): boolean {
  return m.active && m.validTo === null && m.supersededById === null;
}

function byConfidence(a: ExportedMemory, b: ExportedMemory): number {
  return b.confidence - a.confidence || compareStrings(a.id, b.id);
}

/** Headings of the soul moved two levels down, so they nest under MEMORY.md's "## Soul". */
function nestedSoul(soul: string): string[] {
  return soul
    .trimEnd()
    .split('\n')
    .map((line) => (/^#{1,4} /.test(line) ? `##${line}` : line));
}

/** A line of someone's message that cannot turn into a heading or a quote of the log itself. */
function inert(line: string): string {
  return line.replace(/^(\s*)([#>])/, '$1\\$2');
}

/** A transcript line: the first line of the text after the speaker, later lines indented into the item. */
function transcriptItem(time: string, speaker: string, content: string): string {
  const [first = '', ...rest] = content.replace(/\r\n?/g, '\n').trimEnd().split('\n');
  return [`- **${time} ${speaker}:** ${inert(first)}`, ...rest.map((line) => (line.trim() === '' ? '' : `  ${inert(line)}`))].join('\n');
}

function speakerOf(e: ExportedEpisode): string {
  return e.author ? `${oneLine(e.author)} (${e.role})` : e.role;
}

/** Renders the files. Pure: the same document gives the same files. */
export function renderMarkdownExport(doc: ScopeExport, options: MarkdownExportOptions): MarkdownFiles {
  const timeZone = scopeTimeZone({ timezone: doc.scope.timezone ?? null }, options.defaultTimeZone);
  const { day, time } = clock(timeZone);
  const name = oneLine(doc.scope.title ?? doc.scope.key);
  const memoriesById = new Map(doc.memories.map((m) => [m.id, m]));
  const episodesById = new Map(doc.episodes.map((e) => [e.id, e]));
  const episodes = [...doc.episodes].sort((a, b) => compareStrings(a.timestamp, b.timestamp) || compareStrings(a.id, b.id));

  /** Local days of the episodes a memory was learned from (or the day it was created). */
  const sourceDays = (m: ExportedMemory): string[] => {
    const days = m.sourceEpisodeIds.flatMap((id) => {
      const e = episodesById.get(id);
      return e ? [day(e.timestamp)] : [];
    });
    return [...new Set(days.length > 0 ? days : [day(m.createdAt)])].sort(compareStrings);
  };

  // ---- MEMORY.md ----
  const current = doc.memories.filter(isCurrent);
  const categories = [...new Set(current.map((m) => m.category))].sort((a, b) => compareStrings(categoryTitle(a), categoryTitle(b)));
  const memory: string[] = [
    `# MEMORY.md: ${name}`,
    '',
    `Long-term memory of \`${doc.scope.key}\` (${doc.scope.channel}, ${doc.scope.kind}), exported from Nocturne.`,
    `${plural(current.length, 'current memory', 'current memories')}; ${plural(doc.memories.length - current.length, 'earlier or faded version')} in the daily logs; ${plural(episodes.length, 'message')} in memory/. Dates are in ${timeZone}.`,
    '',
    '## Soul',
    '',
    ...(doc.profile ? nestedSoul(doc.profile.soul) : ['_No soul yet: it is written once conversations have been consolidated._']),
    '',
    '## Memories',
    '',
  ];
  if (categories.length === 0) memory.push('_Nothing learned yet._', '');
  for (const category of categories) {
    memory.push(`### ${categoryTitle(category)}`, '');
    for (const m of current.filter((each) => each.category === category).sort(byConfidence)) {
      memory.push(
        `- ${oneLine(m.content)} (confidence ${m.confidence.toFixed(2)}; ${m.sourceEpisodeIds.length > 0 ? 'from' : 'learned'} ${sourceDays(m).join(', ')})`,
      );
    }
    memory.push('');
  }
  const entities = [...doc.entities].sort((a, b) => compareStrings(a.key, b.key) || compareStrings(a.id, b.id));
  if (entities.length > 0) {
    memory.push('## People and things', '');
    for (const e of entities) {
      const attributes =
        e.attributes && typeof e.attributes === 'object' && !Array.isArray(e.attributes)
          ? Object.entries(e.attributes)
              .filter(([, v]) => v !== null && v !== '')
              .map(([k, v]) => `${oneLine(k)}: ${oneLine(typeof v === 'string' ? v : JSON.stringify(v))}`)
          : [];
      memory.push(`- **${oneLine(e.name)}** (${e.kind})${attributes.length > 0 ? `: ${attributes.join('; ')}` : ''}`);
    }
    memory.push('');
  }

  // ---- memory/YYYY-MM-DD.md ----
  const episodesByDay = new Map<string, ExportedEpisode[]>();
  for (const e of episodes) {
    const d = day(e.timestamp);
    episodesByDay.set(d, [...(episodesByDay.get(d) ?? []), e]);
  }
  const learnedByDay = new Map<string, ExportedMemory[]>();
  for (const m of [...doc.memories].sort((a, b) => compareStrings(a.createdAt, b.createdAt) || compareStrings(a.id, b.id))) {
    const d = day(m.createdAt);
    learnedByDay.set(d, [...(learnedByDay.get(d) ?? []), m]);
  }
  const days = [...new Set([...episodesByDay.keys(), ...learnedByDay.keys()])].sort(compareStrings);

  const files = new Map<string, string>([['MEMORY.md', `${memory.join('\n').trimEnd()}\n`]]);
  for (const d of days) {
    const todays = episodesByDay.get(d) ?? [];
    const learned = learnedByDay.get(d) ?? [];
    const lines: string[] = [
      `# ${d}`,
      '',
      `Daily log of \`${doc.scope.key}\`: ${todays.length} ${todays.length === 1 ? 'message' : 'messages'}, ${learned.length} ${learned.length === 1 ? 'memory' : 'memories'} learned. Times in ${timeZone}.`,
      '',
    ];
    if (todays.length > 0) {
      lines.push('## Conversation', '');
      let conversation: string | null | undefined;
      for (const e of todays) {
        if (conversation !== undefined && e.conversationId !== conversation) lines.push('', '---', '');
        conversation = e.conversationId;
        lines.push(transcriptItem(time(e.timestamp), speakerOf(e), e.content));
      }
      lines.push('');
    }
    if (learned.length > 0) {
      lines.push('## Learned', '');
      for (const m of learned) {
        const replacement = m.supersededById ? memoriesById.get(m.supersededById) : undefined;
        const fate = replacement
          ? ` (later replaced by "${oneLine(replacement.content)}")`
          : !m.active
            ? ' (faded since)'
            : m.validTo !== null
              ? ' (no longer true)'
              : '';
        lines.push(`- ${oneLine(m.content)} (${m.category}, confidence ${m.confidence.toFixed(2)})${fate}`);
      }
      lines.push('');
    }
    files.set(`memory/${d}.md`, `${lines.join('\n').trimEnd()}\n`);
  }
  return files;
}

/** Writes the files under `dir` (created if needed; files of the same name are replaced). Returns the paths written. */
/** MEMORY.md and the daily logs as one Markdown document, each file under its own path as a heading comment. */
export function joinMarkdownFiles(files: MarkdownFiles): string {
  return [...files].map(([file, text]) => `<!-- ${file} -->\n\n${text.trimEnd()}\n`).join('\n---\n\n');
}

export async function writeMarkdownExport(dir: string, files: MarkdownFiles): Promise<string[]> {
  const written: string[] = [];
  for (const [relative, text] of files) {
    const file = path.join(dir, relative);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, text, 'utf8');
    written.push(file);
  }
  return written;
}
