/**
 * What a webhook source may send: one message from one of its users. The scope is
 * `webhook:<source>:<user>` (or `webhook:<source>` without a user), so every user of every
 * source has a memory of their own.
 */
import { z } from 'zod';
import { isBlankText, normalizeText, timestampProblem } from '../../memory/episodes/normalize';
import { scopeKeyProblem } from '../../memory/scopes/scope-key';

export const SOURCE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const webhookRequestSchema = z
  .object({
    /** The person on the source's side (their id there); optional for single-user sources. Part of the scope key. */
    user: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .superRefine((user, ctx) => {
        // The same rule as every scope key: broken Unicode (which PostgreSQL would fold into one
        // replacement character, joining two people) and invisible characters are refused.
        const problem = scopeKeyProblem(user);
        if (problem) ctx.addIssue({ code: 'custom', message: `user names the person\u2019s memory: ${problem.replace('a scope key', 'it')}` });
      })
      .optional(),
    /** Display name of the person. */
    name: z.string().trim().min(1).max(200).optional(),
    text: z
      .string()
      .min(1, 'text must not be empty')
      .refine(
        (text) => text === '' || !isBlankText(normalizeText(text)),
        'text must not be empty (spaces, control and invisible characters such as zero-width spaces do not count)',
      ),
    /**
     * ISO 8601; defaults to the time of arrival. At most 5 minutes ahead of our clock and not
     * before 1970 (a future time would keep the person's memory from ever being consolidated).
     */
    timestamp: z.iso
      .datetime({ offset: true })
      .superRefine((timestamp, ctx) => {
        // Not a date: the format check says so already. What was sent is never echoed (it may be
        // a secret pasted in the wrong field); a date is named as the date it reads as.
        const at = new Date(timestamp);
        if (Number.isNaN(at.getTime())) return;
        const problem = timestampProblem(at, new Date());
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    /** The source's own message id: a retried delivery is stored once. */
    messageId: z.string().trim().min(1).max(200).optional(),
    /** Where to POST the reply (signed); without it the reply is in the response. */
    callbackUrl: z.url({ protocol: /^https?$/ }).optional(),
    /**
     * The person edited the message sent earlier under `messageId`: `text` replaces its stored
     * text everywhere (like a forget of the old words); nothing is answered.
     */
    edit: z.boolean().optional(),
  })
  .strict()
  .superRefine((request, ctx) => {
    if (request.edit && !request.messageId) ctx.addIssue({ code: 'custom', path: ['messageId'], message: 'an edit names the message it changes: messageId' });
    if (request.edit && request.callbackUrl) ctx.addIssue({ code: 'custom', path: ['callbackUrl'], message: 'an edit is not answered: leave out callbackUrl' });
  });

export type WebhookRequest = z.infer<typeof webhookRequestSchema>;

export function webhookScopeKey(source: string, user: string | undefined): string {
  return user ? `webhook:${source}:${user}` : `webhook:${source}`;
}
