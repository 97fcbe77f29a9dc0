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
 */
import { createReminderSender, type ReminderSenderOptions } from '../reminder-sender';
import { randomUUID } from 'node:crypto';
import readline from 'node:readline';
import type { ScopeDirectory } from '../../memory/scopes/scope-directory';
import type { Logger } from '../../shared/logger';
import type { CommandScope, CommandServices } from '../commands/command-scope';
import { commandFailureText, HANDLER_FAILED_TEXT } from '../commands/replies';
import type { ConversationHandler } from '../conversation-handler';
import type { InboundMessage } from '../../agent/inbound-message';
import { createTerminalCommands, type CommandAnswer } from './terminal-commands';
import type { LinkServices } from '../commands/link';
import type { WebLinkServices } from '../commands/web';
import { scopeTimeZone } from '../../memory/scopes/scope-policy';

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

/** A line that is a command: `/name` then, after white space, the argument. */
const COMMAND = /^\/([A-Za-z0-9_]+)(?:\s+([\s\S]*))?$/;
const YES = new Set(['y', 'yes']);
const NO = new Set(['', 'n', 'no']);
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

  let rl: readline.Interface | undefined;
  const queue: string[] = [];
  /** No more input: the stream ended or readline was closed. */
  let inputClosed = false;
  /** /quit, stop() or Ctrl-C: lines not started yet are dropped. */
  let leaving = false;
  /** The line being handled, if any. */
  let current: Promise<void> | undefined;
  /** A yes/no question the next line answers. */
  let question: CommandAnswer['question'];
  let scope: CommandScope | undefined;
  let running: Promise<void> | undefined;
  let finished: () => void = () => undefined;
  let lastDigestCheck = 0;
  const digestCheckMs = options.digestCheckMs ?? 60_000;

  /** The scope, created (with its owner) on first use, the way Telegram's access gate does. */
  async function ensureScope(): Promise<CommandScope> {
    if (scope) return scope;
    let row = await directory.ensure({ key: scopeKey, channel: TERMINAL_CHANNEL, kind: 'user', title: authorName, ownerId: authorName });
    if (!row.ownerId) {
      // Created before by something else (an import, the agent): the nightly digest needs its owner.
      row = await directory.setOwner(row.id, authorName);
    }
    scope = { id: row.id, key: row.key, timeZone: scopeTimeZone(row, options.defaultTimeZone) };
    return scope;
  }

  /** Prints the digests built and not shown yet (claimed and marked sent); never throws. */
  async function showWaitingDigests(force: boolean): Promise<void> {
    if (!scope || (!force && Date.now() - lastDigestCheck < digestCheckMs)) return;
    lastDigestCheck = Date.now();
    try {
      await commands.deliverWaitingDigests(scope);
    } catch (error) {
      log.error('could not show the digests waiting for the terminal user', { error });
    }
  }

  function leave(): void {
    leaving = true;
    queue.length = 0;
    rl?.close();
  }

  async function runCommand(name: string, argument: string): Promise<void> {
    try {
      const answer = await commands.run(name, argument, await ensureScope());
      // A new time zone: read the scope again, so the dates shown next use it.
      if (name === 'timezone') scope = undefined;
      // Linked or unlinked: the commands' scope is the one this identity speaks into now.
      if (name === 'link' || name === 'unlink') scope = undefined;
      print(answer.text);
      question = answer.question;
    } catch (error) {
      log.error('a terminal command failed', { command: name, error });
      print(commandFailureText(error));
    }
  }

  async function answerQuestion(asked: NonNullable<CommandAnswer['question']>, text: string): Promise<boolean> {
    const word = text.toLowerCase();
    if (YES.has(word)) {
      try {
        print(await asked.yes());
      } catch (error) {
        log.error('a terminal command failed', { error });
        print(commandFailureText(error));
      }
      return true;
    }
    print(asked.noText);
    // "n" (or an empty line) only answers; anything else also counts as itself.
    return NO.has(word);
  }

  async function converse(text: string): Promise<void> {
    const message: InboundMessage = {
      channel: TERMINAL_CHANNEL,
      scopeKey,
      scopeKind: 'user',
      authorId: authorName,
      authorName,
      text,
      timestamp: new Date(),
      externalId: `terminal:${randomUUID()}`,
    };
    try {
      print(await handler.reply(message));
    } catch (error) {
      log.error('the conversation handler failed', { externalId: message.externalId, error });
      print(HANDLER_FAILED_TEXT);
    }
  }

  async function handleLine(line: string): Promise<void> {
    const text = line.trim();
    if (question) {
      const asked = question;
      question = undefined;
      if (await answerQuestion(asked, text)) return;
    }
    if (text === '') return;
    const command = COMMAND.exec(text);
    if (!command) return converse(text);
    const name = command[1]!.toLowerCase();
    if (name === 'quit' || name === 'exit') return leave();
    return runCommand(name, (command[2] ?? '').trim());
  }

  /** Handles queued lines one at a time; ends the run once input is over and nothing is left. */
  function pump(): void {
    if (current) return;
    const line = queue.shift();
    if (line !== undefined && !leaving) {
      current = handleLine(line)
        .catch((error: unknown) => log.error('a terminal line could not be handled', { error }))
        // Not between a question and its answer.
        .then(() => (question || leaving ? undefined : showWaitingDigests(false)))
        .finally(() => {
          current = undefined;
          if (queue.length === 0 && !leaving && !inputClosed && prompting) rl?.prompt();
          pump();
        });
      return;
    }
    if (leaving || inputClosed) {
      rl?.close();
      finished();
    }
  }

  return {
    run() {
      running ??= (async () => {
        const done = new Promise<void>((resolve) => (finished = resolve));
        try {
          await ensureScope();
        } catch (error) {
          // Messages still reach the handler (it creates the scope); commands try again.
          log.error('the terminal scope could not be prepared', { error });
        }
        if (leaving) return;
        print(`Hello, ${authorName}! I am Nocturne; what you tell me here is remembered in ${scopeKey}. /help lists the commands, /quit leaves.`);
        if (options.banner) print(options.banner);
        await showWaitingDigests(true);
        if (leaving) return;
        await reminderSender?.start().catch((error: unknown) => log.error('the reminders of the terminal user could not be started', { error }));
        rl = readline.createInterface({ input: options.input, output, terminal: prompting && options.input.isTTY === true, crlfDelay: Infinity });
        rl.setPrompt('> ');
        rl.on('line', (line) => {
          if (leaving) return;
          queue.push(line);
          pump();
        });
        rl.on('close', () => {
          inputClosed = true;
          pump();
        });
        // On a terminal, readline takes Ctrl-C from the process: treat it as leaving.
        rl.on('SIGINT', () => {
          output.write('\n');
          leave();
        });
        if (prompting) rl.prompt();
        await done;
        await reminderSender?.stop();
      })();
      return running;
    },

    async stop() {
      leave();
      await reminderSender?.stop();
      await current;
      finished();
      await running?.catch(() => undefined);
    },
  };
}
