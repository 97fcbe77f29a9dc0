/**
 * What a webhook source may send: one message from one of its users. The scope is
 * `webhook:<source>:<user>` (or `webhook:<source>` without a user), so every user of every
 * source has a memory of their own.
 */
import { z } from 'zod';

export const SOURCE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const webhookRequestSchema = z
  .object({
    /** The person on the source's side (their id there); optional for single-user sources. */
    user: z.string().trim().min(1).max(200).optional(),
    /** Display name of the person. */
    name: z.string().trim().min(1).max(200).optional(),
    text: z.string().min(1, 'text must not be empty'),
    /** ISO 8601; defaults to the time of arrival. */
    timestamp: z.iso.datetime({ offset: true }).optional(),
    /** The source's own message id: a retried delivery is stored once. */
    messageId: z.string().trim().min(1).max(200).optional(),
    /** Where to POST the reply (signed); without it the reply is in the response. */
    callbackUrl: z.url({ protocol: /^https?$/ }).optional(),
  })
  .strict();

export type WebhookRequest = z.infer<typeof webhookRequestSchema>;

export function webhookScopeKey(source: string, user: string | undefined): string {
  return user ? `webhook:${source}:${user}` : `webhook:${source}`;
}
