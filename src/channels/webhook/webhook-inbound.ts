/**
 * A webhook message as an {@link InboundMessage}: one scope per source user (`webhook:<source>:<user>`,
 * a person's own memory) or per source when the caller names no user (`webhook:<source>`).
 */
import type { InboundMessage } from '../../agent/inbound-message';
import type { MessageEdit } from '../../memory/episodes/episode-edits';
import type { WebhookMessage } from './webhook-server';

export const WEBHOOK_CHANNEL = 'webhook';

export function webhookInbound(message: WebhookMessage): InboundMessage {
  return {
    channel: WEBHOOK_CHANNEL,
    scopeKey: message.scopeKey,
    scopeKind: message.user ? 'private' : 'source',
    ...(message.user ? { authorId: message.user } : {}),
    ...((message.name ?? message.user) ? { authorName: message.name ?? message.user } : {}),
    text: message.text,
    timestamp: message.timestamp,
    ...(message.externalId ? { externalId: message.externalId } : {}),
  };
}

/** A webhook edit (`edit: true`): the message stored under `messageId` in the same scope gets the new text. */
export function webhookEdit(message: WebhookMessage & { readonly externalId: string }): MessageEdit {
  return { scopeKey: message.scopeKey, externalId: message.externalId, text: message.text, editedAt: message.timestamp, channel: WEBHOOK_CHANNEL };
}
