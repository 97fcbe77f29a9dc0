/**
 * The terminal channel: a conversation on a pair of streams (stdin/stdout under `npm start` and
 * `npm run cli -- chat`, a pseudo-terminal, or PassThrough streams in tests), read with readline.
 *
 * - Every line that is not a command goes to the {@link ConversationHandler} as an
 *   {@link InboundMessage} of channel `terminal`, scope kind `user`, and its answer is printed.
 * - Lines are handled strictly one after the other, in the order they arrived: a pasted block
 *   is answered line by line, never interleaved.
 * - The slash commands are Telegram's (src/channels/terminal/terminal-commands.ts); an unknown
 *   `/command` is answered without the model; `/quit` or `/exit` (or end of input, or Ctrl-C on
 *   a terminal) leaves. Something that only starts with a slash (`/usr/bin is ...`) is a message.
 * - A failing command or reply prints one short line and the conversation goes on.
 * - When the output is a terminal there is a `> ` prompt, shown whenever nothing is waiting.
 * - Control characters (but tab and newline) are removed from what is printed: an answer is the
 *   model's text, and escape sequences in it must not drive the person's terminal.
 *
 * The scope (`terminal:<name>`) is created at start, owned by the terminal user, so commands
 * work before the first message and the scheduler writes the user's nightly digest. Digests
 * built while the terminal was closed are shown (and marked sent) when it opens; one built while
 * it is open is shown after the next line answered (looked for at most once a minute).
 *
 * The parts: reading lines in order (`terminal-lines.ts`), what a line means and the scope the
 * commands act on (`terminal-dialog.ts`), the commands themselves (`terminal-commands.ts`).
 */
import { createReminderSender, type ReminderSenderOptions } from '../reminder-sender';
import type { ScopeDirectory } from '../../memory/scopes/scope-directory';
import type { Logger } from '../../shared/logger';
import type { CommandServices } from '../commands/command-scope';
import type { ConversationHandler } from '../conversation-handler';
import { createTerminalCommands } from './terminal-commands';
import { createTerminalDialog } from './terminal-dialog';
import { createTerminalLines } from './terminal-lines';
import type { LinkServices } from '../commands/link';
import type { WebLinkServices } from '../commands/web';

/** The channel name stored on scopes and episodes. */
export const TERMINAL_CHANNEL = 'terminal';

/**
 * What the terminal is built from: the conversation handler (the agent), the scope directory
 * (its scope and owner), the commands' domain services by name ({@link CommandServices}), and
 * its streams.
 */
export interface TerminalChannelOptions extends CommandServices {
  readonly directory: Pick<ScopeDirectory, 'ensure' | 'setOwner'>;
  readonly handler: ConversationHandler;
  readonly input: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly output: NodeJS.WritableStream & { isTTY?: boolean };
  /** Where the conversation's memories live, e.g. `terminal:ana`. */
  readonly scopeKey: string;
  /** Who is typing (the episodes' author, and the scope's owner). */
  readonly authorName: string;
  readonly logger: Logger;
  /** Zone for dates of a scope without one (Config.timeZone). */
  readonly defaultTimeZone: string;
  /**
   * `DATA_DIR/exports`: `/export` writes into the scope's folder there and records the files in
   * its manifest, where forgetting finds them. Required: a default (the working folder) would put
   * the files where no forget looks.
   */
  readonly exportDir: string;
  /** Least time between two looks for new digests after a line (default one minute). */
  readonly digestCheckMs?: number;
  /** Lines printed after the greeting (the service says which model answers and where logs go). */
  readonly banner?: string;
  /**
   * Reminders the person set here are printed when due while the conversation is open (a
   * terminal has nowhere else to show them); ones due while it was closed are printed, late, at
   * the next start.
   */
  readonly reminderDelivery?: Omit<ReminderSenderOptions, 'channel' | 'scopeKey' | 'send' | 'logger'>;
  /** `/link` and `/unlink` (without them, the commands say linking is not available). */
  readonly link?: LinkServices;
  /** `/web`: links to the memory page (without them, the command says the page is not served). */
  readonly web?: WebLinkServices;
}

export interface TerminalChannel {
  /** Greets, then answers lines until /quit, /exit or the end of input. Call once. */
  run(): Promise<void>;
  /** Stops reading (lines not started yet are dropped) and waits for the line in progress. */
  stop(): Promise<void>;
}

/** C0 and C1 control characters but tab and newline (ESC, CR, BEL, CSI, ...). */
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

export function createTerminalChannel(options: TerminalChannelOptions): TerminalChannel {
  const { directory, handler, output, scopeKey, authorName } = options;
  const log = options.logger.child({ component: 'terminal', scopeKey });
  const prompting = output.isTTY === true;
  const print = (text: string) => {
    const clean = text.replace(CONTROL, '');
    if (clean !== '') output.write(clean.endsWith('\n') ? clean : `${clean}\n`);
  };
  const { catalog, digestBook, forget, archive, scheduler, digestSchedule, scopeControls, conflicts, reminders } = options;
  const commands = createTerminalCommands({
    reminders,
    corrections: options.corrections,
    catalog,
    digestBook,
    forget,
    archive,
    scheduler,
    digestSchedule,
    scopeControls,
    conflicts,
    handler,
    logger: options.logger,
    authorName,
    exportDir: options.exportDir,
    print,
    link: options.link,
    web: options.web,
    identity: { key: scopeKey, channel: TERMINAL_CHANNEL, kind: 'user', title: authorName, ownerId: authorName },
  });
  const reminderSender =
    options.reminderDelivery &&
    createReminderSender({
      ...options.reminderDelivery,
      channel: TERMINAL_CHANNEL,
      scopeKey,
      logger: options.logger,
      send: async (_reminder, text) => print(text),
    });
  const dialog = createTerminalDialog({
    commands,
    handler,
    directory,
    channel: TERMINAL_CHANNEL,
    scopeKey,
    authorName,
    defaultTimeZone: options.defaultTimeZone,
    digestCheckMs: options.digestCheckMs ?? 60_000,
    print,
    leave: () => lines.leave(),
    log,
  });
  const lines = createTerminalLines({
    output,
    prompting,
    handle: (line) => dialog.handleLine(line),
    // Not between a question and its answer.
    afterLine: () => (dialog.asking() ? undefined : dialog.showWaitingDigests(false)),
    log,
  });
  let running: Promise<void> | undefined;

  return {
    run() {
      running ??= (async () => {
        const done = lines.whenFinished();
        try {
          await dialog.ensureScope();
        } catch (error) {
          // Messages still reach the handler (it creates the scope); commands try again.
          log.error('the terminal scope could not be prepared', { error });
        }
        if (lines.leaving) return;
        print(`Hello, ${authorName}! I am Nocturne; what you tell me here is remembered in ${scopeKey}. /help lists the commands, /quit leaves.`);
        if (options.banner) print(options.banner);
        await dialog.showWaitingDigests(true);
        if (lines.leaving) return;
        await reminderSender?.start().catch((error: unknown) => log.error('the reminders of the terminal user could not be started', { error }));
        lines.open(options.input);
        await done;
        await reminderSender?.stop();
      })();
      return running;
    },

    async stop() {
      lines.leave();
      await reminderSender?.stop();
      await lines.current;
      lines.finish();
      await running?.catch(() => undefined);
    },
  };
}
