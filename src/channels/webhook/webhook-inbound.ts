/**
 * A webhook message as an {@link InboundMessage}: one scope per source user (`webhook:<source>:<user>`,
 * a person's own memory) or per source when the caller names no user (`webhook:<source>`).
 */
import type { InboundMessage } from '../../agent/inbound-message';
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
