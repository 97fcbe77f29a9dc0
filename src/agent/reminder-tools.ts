/**
 * The reminder tools given to the model beside the memory tools: `reminder_set` (a text and the
 * person's local date and time), `reminder_list` and `reminder_cancel`. Like the memory tools they
 * are bound to the scope of the message being answered (no scope argument; an id of another scope
 * reads "not found"), and the time is read in the scope's own zone from its policy, so "Friday at
 * 9" means 9 o'clock where the person is. A reminder goes out on the channel it was asked on.
 */
import { z } from 'zod';
import type { LlmTool } from '../llm/language-model';
import type { ReminderBook } from '../memory/reminders/reminder-book';
import { REMINDER_CHANNELS } from '../memory/reminders/reminder-book';
import { localReminderTime, parseReminderTime } from '../memory/reminders/reminder-time';
import { AppError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { BoundTools, MemoryTools, ToolBinding, ToolResult } from './memory-tools';

const setArgs = z.strictObject({ text: z.string().trim().min(1).max(500), at: z.string().trim().min(1).max(40) });
const listArgs = z.strictObject({});
const cancelArgs = z.strictObject({ id: z.string().trim().min(1).max(100) });

export const REMINDER_TOOL_DEFINITIONS: readonly LlmTool[] = [
  {
    name: 'reminder_set',
    description:
      'Remind the person of something at a date and time, in this chat. Use it when they ask to be reminded, or accept ' +
      'your offer: when they mention a dated plan or appointment you may offer once ("want a reminder?"), never set one unasked.',
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'what to remind of, short, addressed to the person ("call the dentist")' },
        at: { type: 'string', description: "the person's local date and time, YYYY-MM-DD HH:MM (their zone: the one of Now in the prompt)" },
      },
      required: ['text', 'at'],
    },
  },
  {
    name: 'reminder_list',
    description: "The person's reminders still to come, soonest first, with their ids.",
    parameters: { type: 'object', properties: {} },
  },
  {
    name: 'reminder_cancel',
    description: 'Cancel one of the reminders still to come, by the id reminder_list gave.',
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
];

export interface ReminderToolsDeps {
  readonly reminders: Pick<ReminderBook, 'set' | 'upcoming' | 'cancel'>;
  readonly logger: Logger;
  /** Zone of a binding that names none (the service default). */
  readonly defaultTimeZone: string;
}

/** The reminder tools, bound per reply like the memory tools. */
export function createReminderTools(deps: ReminderToolsDeps): MemoryTools {
  const log = deps.logger.child({ component: 'reminder-tools' });
  return {
    definitions: REMINDER_TOOL_DEFINITIONS,
    bind(b: ToolBinding): BoundTools {
      const zone = b.timeZone ?? deps.defaultTimeZone;
      const when = (instant: Date) => `${localReminderTime(instant, zone)} (${zone})`;
      const handlers: Record<string, (raw: Record<string, unknown>) => Promise<ToolResult>> = {
        async reminder_set(raw) {
          const args = setArgs.parse(raw);
          if (!(REMINDER_CHANNELS as readonly string[]).includes(b.channel)) {
            return { content: `reminders cannot be delivered on the ${b.channel} channel yet; tell the person so`, isError: true };
          }
          const dueAt = parseReminderTime(args.at, zone);
          const reminder = await deps.reminders.set({ scopeId: b.scopeId, text: args.text, dueAt, channel: b.channel, now: b.now });
          return { content: `reminder set for ${when(reminder.dueAt)}: ${reminder.text} (id ${reminder.id})`, isError: false };
        },
        async reminder_list(raw) {
          listArgs.parse(raw);
          const upcoming = await deps.reminders.upcoming(b.scopeId);
          if (upcoming.length === 0) return { content: 'no reminders to come', isError: false };
          return { content: upcoming.map((r) => `${r.id} ${when(r.dueAt)}: ${r.text}`).join('\n'), isError: false };
        },
        async reminder_cancel(raw) {
          const { id } = cancelArgs.parse(raw);
          const cancelled = await deps.reminders.cancel(b.scopeId, id);
          if (!cancelled) return { content: `not found: no reminder ${id} still to come`, isError: true };
          return { content: `cancelled the reminder of ${when(cancelled.dueAt)}: ${cancelled.text}`, isError: false };
        },
      };
      return {
        async execute(call) {
          const handler = handlers[call.name];
          if (!handler) return { content: `unknown tool ${call.name}`, isError: true };
          try {
            return await handler(call.arguments ?? {});
          } catch (error) {
            if (error instanceof z.ZodError) {
              return { content: `invalid arguments for ${call.name}: ${error.issues.map((i) => i.message).join('; ')}`, isError: true };
            }
            if (error instanceof AppError && error.category === 'user') return { content: error.message, isError: true };
            log.warn('reminder tool failed', { tool: call.name, scopeId: b.scopeId, error });
            return { content: `${call.name} failed; tell the person the reminder could not be set`, isError: true };
          }
        },
      };
    },
  };
}

/** Both tool sets as one: the definitions of each, a call routed to the set that defines it. */
export function joinTools(first: MemoryTools, second: MemoryTools): MemoryTools {
  const owns = new Set(second.definitions.map((d) => d.name));
  return {
    definitions: [...first.definitions, ...second.definitions],
    bind(binding) {
      const a = first.bind(binding);
      const b = second.bind(binding);
      return { execute: (call) => (owns.has(call.name) ? b.execute(call) : a.execute(call)) };
    },
  };
}
