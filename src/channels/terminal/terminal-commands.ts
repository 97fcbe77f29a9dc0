/**
 * The terminal's slash commands: the same commands as Telegram, with the logic and wording of
 * src/channels/commands/, in forms that suit a line-based conversation:
 *
 * - `/memories [category]` lists, `/memories next`, `/memories prev` and `/memories 3` page
 *   (through the filter shown last), `/memories all` drops the filter, `/memories --all` lists
 *   the faded memories too;
 * - `/forget N` and `/forget words` list what would go and ask "Forget it? (y/n)": the next line answers;
 * - `/digest` prints the digest, claimed and marked sent like a delivered one;
 * - `/keep N` answers the digest's "Which is true?" (no buttons on a terminal);
 * - `/fix N new text`, `/pin N` and `/unpin N` correct and pin a memory (commands/fix.ts);
 * - `/export` writes `<stem>.json` and `<stem>.md` into a folder and prints their paths.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { exportFolderName } from '../../memory/archive/export-paths';
import { recordExportFiles } from '../../memory/archive/export-registry';
import type { Logger } from '../../shared/logger';
import type { ForgetPreview } from '../../memory/forget/forget-service';
import type { CommandScope, CommandServices } from '../commands/command-scope';
import { pauseLearning, resumeLearning, sleepNow } from '../commands/consolidation';
import { deliverDigestNow, NOTHING_NEW_TEXT } from '../commands/digest';
import { answerTimeZone, changeDigestSchedule, parseDigestArgument } from '../commands/digest-schedule';
import { buildExportFiles, exportCounts } from '../commands/export';
import { confirmForget, FORGET_KEPT_TEXT, FORGET_USAGE, forgetReason, parseForgetArgument, previewForgetNumber, previewForgetWords } from '../commands/forget';
import { helpText, NUMBERS_NOTE } from '../commands/help';
import { answerKeep } from '../commands/keep';
import { answerFix, answerPin } from '../commands/fix';
import { answerLink, answerUnlink, LINK_UNAVAILABLE_TEXT, type LinkServices } from '../commands/link';
import { answerWeb, type WebLinkServices } from '../commands/web';
import type { ScopeDescriptor } from '../../memory/scopes/scope-directory';
import { parseMemoriesFlags, renderMemoryList } from '../commands/memories';
import { createNumberedLists } from '../commands/numbered-lists';
import { END_TEXT, unknownCommandText } from '../commands/replies';
import { answerWhy } from '../commands/why';
import { answerSettings, parseSettingsArgument } from '../commands/settings';
import { createReminderCommands } from '../commands/reminders';
import type { ConversationHandler } from '../conversation-handler';
import type { DeliverableDigest } from '../../memory/digests/digest-book';
import { deliverDigestOnce } from '../digest-delivery';

/** Named in audit reasons: "the owner sent /pause in the terminal". */
const WHERE = 'the terminal';

/** The `/help` answer on the terminal. */
export const TERMINAL_HELP_TEXT = helpText({
  about: 'When I have a digest of what I learned, I show it here when you come back (or now, with /digest).',
  usage: {
    memories: '[--all] [category | next | prev | N]',
    forget: 'N | words',
    why: 'N',
    fix: 'N new text',
    pin: 'N',
    unpin: 'N',
    keep: 'N',
    digest: '[at HH:MM | off | on]',
    timezone: '[Zone]',
    settings: '[capped … | sleep … | budget …]',
  },
  footer: `${NUMBERS_NOTE} /quit (or Ctrl-D) leaves; the conversation stays open until /end.`,
});

/** What a command answers: text to print, possibly a yes/no question the next line answers. */
export interface CommandAnswer {
  readonly text: string;
  /** Set when `text` asks a question: what to do with a yes, and what to say to a no. */
  readonly question?: { readonly yes: () => Promise<string>; readonly noText: string };
}

/** The commands' domain services by name ({@link CommandServices}), and the terminal's own parts. */
export interface TerminalCommandDeps extends CommandServices {
  readonly handler: ConversationHandler;
  readonly logger: Logger;
  readonly authorName: string;
  /** `DATA_DIR/exports`: `/export` writes into the scope's folder there and records its files in its manifest. */
  readonly exportDir: string;
  /** Prints one block of text (a digest as it is delivered). */
  readonly print: (text: string) => void;
  /** `/link` and `/unlink`, and the identity they act for (the terminal user's own scope key). */
  readonly link?: LinkServices;
  readonly identity?: ScopeDescriptor;
  /** `/web` (and `/memory`, which on a terminal is the same link); without it they say the page is not served. */
  readonly web?: WebLinkServices;
}

export interface TerminalCommands {
  /** Answers `/name argument`; throws when the command fails. */
  run(name: string, argument: string, scope: CommandScope): Promise<CommandAnswer>;
  /** Prints the scope's digests built and not delivered yet (claimed and marked sent); returns how many. */
  deliverWaitingDigests(scope: CommandScope): Promise<number>;
}

/** Which page `/memories <argument>` asks for, given the listing shown last. */
function memoriesRequest(argument: string, last: Listing | undefined): Listing {
  const { withFaded, rest } = parseMemoriesFlags(argument);
  const word = rest.toLowerCase();
  // Paging keeps the listing's --all; a new listing has it only when asked.
  const paging = word === 'next' || word === 'prev' || word === 'previous' || /^\d{1,6}$/.test(word);
  return { ...pageOf(word, last), withFaded: withFaded || (paging && last?.withFaded === true) };
}

/** A listing: its filter, page, and whether faded memories are in it. */
interface Listing {
  readonly category: string | null;
  readonly page: number;
  readonly withFaded: boolean;
}

function pageOf(word: string, last: Listing | undefined): { category: string | null; page: number } {
  if (word === '') return { category: null, page: 0 };
  if (word === 'all') return { category: null, page: 0 };
  if (word === 'next') return last ? { category: last.category, page: last.page + 1 } : { category: null, page: 0 };
  if (word === 'prev' || word === 'previous') return { category: last?.category ?? null, page: Math.max(0, (last?.page ?? 0) - 1) };
  if (/^\d{1,6}$/.test(word)) return { category: last?.category ?? null, page: Math.max(0, Number(word) - 1) };
  return { category: word, page: 0 };
}

export function createTerminalCommands(deps: TerminalCommandDeps): TerminalCommands {
  const { catalog, digestBook, archive, scheduler, digestSchedule } = deps;
  const lists = createNumberedLists({ maxScopes: 100 });
  const reminderCommands = createReminderCommands(deps.reminders);
  const log = deps.logger.child({ component: 'terminal' });
  /** The filter and page of the last /memories, for `next`, `prev` and page numbers. */
  let lastListing: (Listing & { scopeId: string }) | undefined;

  function deliver(digest: DeliverableDigest) {
    return deliverDigestOnce({ digestBook, digest, logger: log, send: async (part) => deps.print(part) });
  }

  async function memories(argument: string, scope: CommandScope): Promise<CommandAnswer> {
    const wanted = memoriesRequest(argument, lastListing?.scopeId === scope.id ? lastListing : undefined);
    const list = await renderMemoryList(catalog, scope, wanted.page, wanted.category, wanted.withFaded);
    lists.rememberPage(scope.id, list.category, list.entries, new Date());
    lastListing = { scopeId: scope.id, category: list.category, page: list.page, withFaded: list.withFaded };
    const hints: string[] = [];
    if (list.pages > 1) {
      const moves = [...(list.page < list.pages - 1 ? ['/memories next'] : []), ...(list.page > 0 ? ['/memories prev'] : []), '/memories N for page N'];
      hints.push(`More: ${moves.join(' · ')}`);
    }
    if (list.categories.length > 1 || list.category) {
      hints.push(`Categories: ${list.categories.join(', ')} (/memories <category>${list.category ? ', /memories all' : ''})`);
    }
    return { text: [list.text, ...hints].join('\n') };
  }

  async function forget(argument: string, scope: CommandScope): Promise<CommandAnswer> {
    const request = parseForgetArgument(argument);
    const reason = forgetReason(WHERE);
    if (request.kind === 'usage') return { text: FORGET_USAGE };
    const answer =
      request.kind === 'number'
        ? await previewForgetNumber({ lists, digestBook, forget: deps.forget, scope, n: request.n })
        : await previewForgetWords(deps.forget, scope.id, request.words);
    if (answer.kind === 'answer') return { text: answer.text };
    const preview: ForgetPreview = answer.preview;
    return { text: `${answer.text} (y/n)`, question: { yes: () => confirmForget(preview, reason), noText: FORGET_KEPT_TEXT } };
  }

  async function exportFiles(scope: CommandScope): Promise<CommandAnswer> {
    const files = await buildExportFiles(archive, scope);
    // The scope's own folder (export-paths.ts), where a later forget finds and scrubs the files.
    // Recorded before they are written (export-registry.ts), so the forget finds them wherever they are.
    const dir = path.join(path.resolve(deps.exportDir), exportFolderName(scope));
    const [jsonPath, markdownPath] = (await recordExportFiles(deps.exportDir, scope.id, [
      { file: path.join(dir, `${files.stem}.json`), kind: 'json' },
      { file: path.join(dir, `${files.stem}.md`), kind: 'markdown' },
    ])) as [string, string];
    await fs.writeFile(jsonPath, files.json);
    await fs.writeFile(markdownPath, files.markdown);
    return {
      text: [
        `Everything I keep about you (${exportCounts(files)}):`,
        `  ${jsonPath} — as JSON: the complete export (npm run cli -- import-scope reads it back)`,
        `  ${markdownPath} — the same, to read: what I know about you, then day by day`,
      ].join('\n'),
    };
  }

  return {
    async deliverWaitingDigests(scope) {
      let sent = 0;
      for (const digest of await digestBook.undelivered(scope.id)) {
        if ((await deliver(digest)) === 'sent') sent++;
      }
      return sent;
    },

    async run(name, argument, scope) {
      switch (name) {
        case 'start':
          return { text: `Hello, ${deps.authorName}! What you tell me here stays in your memory (${scope.key}).\n\n${TERMINAL_HELP_TEXT}` };
        case 'help':
          return { text: TERMINAL_HELP_TEXT };
        case 'memories':
          return memories(argument, scope);
        case 'forget':
          return forget(argument, scope);
        case 'why':
          return { text: await answerWhy({ catalog, digestBook, lists }, scope, argument) };
        case 'fix':
          return { text: await answerFix({ catalog, digestBook, lists, corrections: deps.corrections }, { scope, where: WHERE }, argument) };
        case 'pin':
        case 'unpin':
          return { text: await answerPin({ catalog, digestBook, lists, corrections: deps.corrections }, { scope, where: WHERE }, argument, name === 'pin') };
        case 'keep':
          return { text: await answerKeep({ conflicts: deps.conflicts, digestBook, lists, scope, argument, where: WHERE }) };
        case 'digest': {
          const request = parseDigestArgument(argument);
          if (request.kind !== 'now') return { text: await changeDigestSchedule(digestSchedule, scope, request, WHERE) };
          const sent = await deliverDigestNow(digestBook, scope.id, deliver);
          return { text: sent === 0 ? NOTHING_NEW_TEXT : '' };
        }
        case 'timezone':
          return { text: await answerTimeZone(digestSchedule, scope, argument, WHERE) };
        case 'settings':
          return { text: await answerSettings(deps.scopeControls, scope, parseSettingsArgument(argument), WHERE) };
        case 'sleep':
          return { text: await sleepNow({ scheduler, digestBook, lists }, scope) };
        case 'pause':
          return { text: await pauseLearning(scheduler, scope.id, WHERE) };
        case 'resume':
          return { text: await resumeLearning(scheduler, scope.id, WHERE) };
        case 'export':
          return exportFiles(scope);
        case 'reminders':
          return { text: await reminderCommands.answer(scope, argument) };
        case 'link':
          return { text: deps.identity ? await answerLink(deps.link, deps.identity, argument) : LINK_UNAVAILABLE_TEXT };
        case 'unlink':
          return { text: deps.identity ? await answerUnlink(deps.link, deps.identity) : LINK_UNAVAILABLE_TEXT };
        case 'web':
        case 'memory':
          return {
            text: await answerWeb(
              deps.web,
              { scopeId: scope.id, identityKey: deps.identity?.key ?? scope.key, group: false },
              `asked for with /${name} on the terminal`,
            ),
          };
        case 'end':
          await deps.handler.end(scope.key);
          return { text: END_TEXT };
        default:
          return { text: unknownCommandText(`/${name}`) };
      }
    },
  };
}
