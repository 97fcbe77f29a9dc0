/**
 * What one line of the terminal conversation means, apart from how lines are read: the answer to
 * a yes/no question a command asked, a slash command, `/quit`, or a message for the agent. It also
 * keeps the scope the commands act on (created with its owner on first use, read again after a
 * command that changes it) and shows the digests waiting for the person.
 *
 * A failing command or reply prints one short line, so the conversation goes on.
 */
import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../../agent/inbound-message';
import type { ScopeDirectory } from '../../memory/scopes/scope-directory';
import { scopeTimeZone } from '../../memory/scopes/scope-policy';
import type { Logger } from '../../shared/logger';
import type { CommandScope } from '../commands/command-scope';
import { commandFailureText, HANDLER_FAILED_TEXT } from '../commands/replies';
import type { ConversationHandler } from '../conversation-handler';
import type { CommandAnswer, TerminalCommands } from './terminal-commands';

/** A line that is a command: `/name` then, after white space, the argument. */
const COMMAND = /^\/([A-Za-z0-9_]+)(?:\s+([\s\S]*))?$/;
const YES = new Set(['y', 'yes']);
const NO = new Set(['', 'n', 'no']);

/** The meaning of the terminal's lines, for one person in one scope. */
export interface TerminalDialog {
  /** Answers one line (a failure is printed, not thrown, except the scope's own). */
  handleLine(line: string): Promise<void>;
  /** The scope, created (with its owner) on first use, the way Telegram's access gate does. */
  ensureScope(): Promise<CommandScope>;
  /** Prints the digests built and not shown yet (at most once per `digestCheckMs` unless forced); never throws. */
  showWaitingDigests(force: boolean): Promise<void>;
  /** Whether the next line answers a question. */
  asking(): boolean;
}

/** The dialog of one terminal: its scope is looked up on first use, not here. */
export function createTerminalDialog(deps: {
  commands: TerminalCommands;
  handler: ConversationHandler;
  directory: Pick<ScopeDirectory, 'ensure' | 'setOwner'>;
  /** The channel name stored on the scope and the messages. */
  channel: string;
  scopeKey: string;
  authorName: string;
  defaultTimeZone: string;
  digestCheckMs: number;
  print: (text: string) => void;
  /** `/quit` and `/exit`: stop reading lines. */
  leave: () => void;
  log: Logger;
}): TerminalDialog {
  const { commands, handler, directory, channel, scopeKey, authorName, print, log } = deps;
  /** A yes/no question the next line answers. */
  let question: CommandAnswer['question'];
  let scope: CommandScope | undefined;
  let lastDigestCheck = 0;

  async function ensureScope(): Promise<CommandScope> {
    if (scope) return scope;
    let row = await directory.ensure({ key: scopeKey, channel, kind: 'user', title: authorName, ownerId: authorName });
    if (!row.ownerId) {
      // Created before by something else (an import, the agent): the nightly digest needs its owner.
      row = await directory.setOwner(row.id, authorName);
    }
    scope = { id: row.id, key: row.key, timeZone: scopeTimeZone(row, deps.defaultTimeZone) };
    return scope;
  }

  async function showWaitingDigests(force: boolean): Promise<void> {
    if (!scope || (!force && Date.now() - lastDigestCheck < deps.digestCheckMs)) return;
    lastDigestCheck = Date.now();
    try {
      await commands.deliverWaitingDigests(scope);
    } catch (error) {
      log.error('could not show the digests waiting for the terminal user', { error });
    }
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
      channel,
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

  return {
    async handleLine(line) {
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
      if (name === 'quit' || name === 'exit') return deps.leave();
      return runCommand(name, (command[2] ?? '').trim());
    },
    ensureScope,
    showWaitingDigests,
    asking: () => question !== undefined,
  };
}
