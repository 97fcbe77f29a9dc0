/** What every channel says around the commands: ending a conversation, an unknown command, failures. */
import { AppError } from '../../shared/errors';
import { asSentence } from '../../shared/sentence';

/** The answer to `/end`. */
export const END_TEXT = 'Conversation ended. I will think it over while I sleep; your next message starts a new one.';

/** What the person reads when the handler fails (their message is stored by then, or will be on retry). */
export const HANDLER_FAILED_TEXT = 'Sorry, I could not answer that just now. Your message is not lost; please try again in a moment.';

/** What the person reads when a command fails for a reason that is not theirs. */
export const COMMAND_FAILED_TEXT = 'Sorry, something went wrong on my side. Please try again in a moment.';

/** The answer to a `/command` no channel knows: it does not go to the model. */
export function unknownCommandText(command: string): string {
  return `I do not know ${command}. /help lists what I understand.`;
}

/** What to tell the person about a failed command: a user error's own message, else an apology. */
export function commandFailureText(error: unknown): string {
  return error instanceof AppError && error.category === 'user' ? asSentence(error.message) : COMMAND_FAILED_TEXT;
}
