/**
 * How the terminal reads its lines: readline on the input stream, a queue handled strictly one
 * line after the other in the order they arrived (a pasted block is answered line by line, never
 * interleaved), the `> ` prompt when the output is a terminal and nothing is waiting, and leaving
 * (`/quit`, end of input, Ctrl-C on a terminal, or a stop) which drops the lines not started yet.
 * Kept apart from what a line means (terminal-dialog.ts), which this file never looks at.
 */
import readline from 'node:readline';
import type { Logger } from '../../shared/logger';

/** The reading side of the terminal. */
export interface TerminalLines {
  /** True once leaving: lines not started yet are dropped. */
  readonly leaving: boolean;
  /** The line being handled, if any. */
  readonly current: Promise<void> | undefined;
  /** Resolves when reading is over (input ended or left) and no line is in progress, or on {@link finish}. */
  whenFinished(): Promise<void>;
  /** Starts reading `input` (once). */
  open(input: NodeJS.ReadableStream & { isTTY?: boolean }): void;
  /** Stops reading: lines not started yet are dropped. */
  leave(): void;
  /** Resolves {@link whenFinished} now (a stop that waited for the line in progress). */
  finish(): void;
}

/** The line reader of one terminal; nothing is read until `open()`. */
export function createTerminalLines(deps: {
  output: NodeJS.WritableStream;
  /** Whether to show the `> ` prompt (the output is a terminal). */
  prompting: boolean;
  /** Handles one line; a rejection is logged. */
  handle: (line: string) => Promise<void>;
  /** Runs after a line handled, unless leaving (the terminal looks for new digests then). */
  afterLine: () => Promise<void> | undefined;
  log: Logger;
}): TerminalLines {
  const { output, prompting, handle, afterLine, log } = deps;
  let rl: readline.Interface | undefined;
  const queue: string[] = [];
  /** No more input: the stream ended or readline was closed. */
  let inputClosed = false;
  /** /quit, stop() or Ctrl-C: lines not started yet are dropped. */
  let leaving = false;
  let current: Promise<void> | undefined;
  let finished: () => void = () => undefined;

  function leave(): void {
    leaving = true;
    queue.length = 0;
    rl?.close();
  }

  /** Handles queued lines one at a time; ends the run once input is over and nothing is left. */
  function pump(): void {
    if (current) return;
    const line = queue.shift();
    if (line !== undefined && !leaving) {
      current = handle(line)
        .catch((error: unknown) => log.error('a terminal line could not be handled', { error }))
        .then(() => (leaving ? undefined : afterLine()))
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
    get leaving() {
      return leaving;
    },
    get current() {
      return current;
    },
    whenFinished: () => new Promise<void>((resolve) => (finished = resolve)),
    open(input) {
      rl = readline.createInterface({ input, output, terminal: prompting && input.isTTY === true, crlfDelay: Infinity });
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
    },
    leave,
    finish: () => finished(),
  };
}
