/**
 * Who wrote a forwarded Telegram message first, from its `forward_origin`: a person (their
 * name), a person who hides their account (the name Telegram shows), a group or a channel (its
 * title, with the author's signature when there is one). The name is what the person sees above
 * the forwarded message; it is stored with the episode so that neither the reply nor sleep takes
 * someone else's words for the person's own.
 */
import type { Message, MessageOrigin } from 'grammy/types';

/** A chat's name as Telegram shows it. */
function chatName(chat: { title?: string; first_name?: string; last_name?: string; username?: string }): string {
  return chat.title ?? ([chat.first_name, chat.last_name].filter(Boolean).join(' ') || (chat.username ? `@${chat.username}` : 'a chat'));
}

/** The name of the origin; "someone" when Telegram gives none. */
export function originName(origin: MessageOrigin): string {
  switch (origin.type) {
    case 'user':
      return [origin.sender_user.first_name, origin.sender_user.last_name].filter(Boolean).join(' ') || 'someone';
    case 'hidden_user':
      return origin.sender_user_name.trim() || 'someone';
    case 'chat':
      return [chatName(origin.sender_chat), origin.author_signature].filter(Boolean).join(', ');
    case 'channel':
      return [chatName(origin.chat), origin.author_signature].filter(Boolean).join(', ');
    default:
      return 'someone';
  }
}

/** Who a forwarded message comes from, or undefined when the message is the author's own. */
export function forwardedFromOf(message: Message): string | undefined {
  return message.forward_origin ? originName(message.forward_origin) : undefined;
}
