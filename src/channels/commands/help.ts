/**
 * The command list every channel offers, and the `/help` text built from it, so a command's
 * description is written once and the list and the help never disagree. Telegram registers the
 * list as its command menu; the terminal shows it with the arguments each command takes there.
 */

/** A command and what it does (Telegram shows the description in its menu: 3-256 characters). */
export interface ChannelCommand {
  readonly command: string;
  readonly description: string;
}

/** Every command, in menu order. */
export const COMMANDS: readonly ChannelCommand[] = [
  { command: 'memories', description: 'What I remember about you (by category, with numbers; --all: faded ones too)' },
  { command: 'forget', description: 'Forget something: /forget 3 or /forget my ex' },
  { command: 'why', description: 'Where a memory came from: /why 3' },
  { command: 'fix', description: 'Correct a memory: /fix 3 Jordi is my husband' },
  { command: 'pin', description: 'Keep a memory from ever fading: /pin 3 (/unpin 3 lets it fade again)' },
  { command: 'unpin', description: 'Let a pinned memory fade again like any other: /unpin 3' },
  { command: 'keep', description: 'Which is true, when I heard two things that conflict: /keep 3' },
  { command: 'digest', description: 'What I learned since the last digest, now; /digest at 21:30 or /digest off for the evening one' },
  { command: 'timezone', description: 'Your time zone, for dates and the digest: /timezone Europe/Madrid' },
  { command: 'settings', description: 'Capped memory, sleep window, daily budgets: /settings sleep 02:00-06:00' },
  { command: 'sleep', description: 'Sort through our recent conversations now' },
  { command: 'pause', description: 'Stop learning from our conversations' },
  { command: 'resume', description: 'Start learning again' },
  { command: 'reminders', description: 'Your reminders to come; /reminders cancel 2 cancels number 2' },
  { command: 'export', description: 'Everything I keep, as JSON and Markdown files' },
  { command: 'memory', description: 'Open your memory page: see, correct, pin or forget what I remember' },
  { command: 'web', description: 'A one-time link to your memory page in a browser (10 minutes)' },
  { command: 'link', description: 'One memory for your chats: /link gives a code, /link CODE in your other chat joins them' },
  { command: 'unlink', description: 'Stop this chat joining the linked memory (what was merged stays)' },
  { command: 'end', description: 'End this conversation (start fresh)' },
  { command: 'help', description: 'What I can do' },
  { command: 'start', description: 'Say hello' },
];

/** The first sentence of every help text. */
export const ABOUT_TEXT = 'I remember our conversations, and while I sleep I sort them into lasting memories.';

/** What the numbers in `/forget N` and `/why N` mean. */
export const NUMBERS_NOTE = 'Numbers in /forget, /why, /fix, /pin and /keep refer to the last /memories list, /sleep summary or digest you saw.';

/**
 * A help text: {@link ABOUT_TEXT} and `about`, one line per command (but /start; `usage` adds a
 * command's arguments, e.g. `{ memories: '[category]' }`), then `footer`.
 */
export function helpText(params: { about: string; commands?: readonly ChannelCommand[]; usage?: Readonly<Record<string, string>>; footer: string }): string {
  const commands = (params.commands ?? COMMANDS).filter((c) => c.command !== 'start');
  const line = (c: ChannelCommand) => {
    const args = params.usage?.[c.command];
    return `/${c.command}${args ? ` ${args}` : ''} — ${c.description}`;
  };
  return [`${ABOUT_TEXT} ${params.about}`, '', ...commands.map(line), '', params.footer].join('\n');
}
