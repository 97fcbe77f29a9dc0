/**
 * What the channel-neutral commands (src/channels/commands/) work with: the scope a command is
 * about, the slice of the core they use, and two small text helpers. Telegram's chat scope and
 * the terminal's scope both satisfy {@link CommandScope}, so each command's logic and wording is
 * written once and every channel only decides how to show it (a message with buttons, a line on
 * a terminal).
 */
import type { Core } from '../../core';

/** The services the commands need from the core. */
export type CommandCore = Pick<Core, 'db' | 'scopes' | 'forget' | 'scheduler'>;

/** The scope a command acts on. */
export interface CommandScope {
  readonly id: string;
  readonly key: string;
  /** IANA zone for dates shown to the person (the scope's own, else the service default). */
  readonly timeZone: string;
}

/** `text` on one line (runs of white space folded), cut at `max` characters with an ellipsis. */
export function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `1 memory`, `2 memories`. */
export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
