/**
 * The port a channel calls to have a conversation: owned by the channels, implemented by the
 * agent loop (adapted in the composition root), so no channel imports the agent.
 */
import type { InboundMessage } from '../agent/inbound-message';
import type { EditOutcome, MessageEdit } from '../memory/episodes/episode-edits';

export interface ConversationHandler {
  /**
   * Answers one message. The handler stores the message (and its reply) as episodes of
   * `message.scopeKey`; the channel only delivers the text it returns. An empty answer sends
   * nothing.
   */
  reply(message: InboundMessage): Promise<string>;
  /**
   * Answers a message that an attempt which did not finish (a replica that died) may have stored
   * already: the reply stored for it when there is one, else a new reply. Used by the Telegram
   * webhook when it takes over such an update; without it, `reply` is used.
   */
  replyAgain?(message: InboundMessage): Promise<string>;
  /**
   * Stores a message that is not addressed to the agent (a group message nobody asked it to
   * answer) as an episode of its conversation, with no reply and no model call. A handler
   * without it (a test double) leaves such messages unstored.
   */
  observe?(message: InboundMessage): Promise<void>;
  /**
   * The person edited a message they sent: its new text replaces the stored one everywhere
   * (memory/episodes/episode-edits.ts). A handler without it (a test double) ignores edits.
   */
  edit?(edit: MessageEdit): Promise<EditOutcome>;
  /** Ends the open conversation of a scope (the owner said `/end`), so it can be consolidated. */
  end(scopeKey: string): Promise<void>;
}
