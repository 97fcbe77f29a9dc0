/**
 * `/digest`: the digest now, instead of waiting for the evening. It covers what was learned
 * since the previous digest (the period ends now, so the nightly one starts from here), and is
 * delivered through the same claim-send-mark path as the nightly digests
 * (src/channels/digest-delivery.ts), so it is never delivered twice. Digests built earlier and
 * not delivered yet go out first.
 */
import type { DeliverableDigest, DigestBook } from '../../memory/digests/digest-book';
import type { DeliveryOutcome } from '../digest-delivery';

/** The answer to `/digest` when nothing was learned, corrected or forgotten since the last one. */
export const NOTHING_NEW_TEXT = 'Nothing new since your last digest: I have not learned, corrected or forgotten anything about you since then.';

/**
 * Builds the digest up to now and delivers it, after any undelivered earlier ones, with
 * `deliver` (the channel's claim-send-mark). Returns how many were delivered (0: say
 * {@link NOTHING_NEW_TEXT}); throws when one could not be delivered.
 */
export async function deliverDigestNow(
  digestBook: Pick<DigestBook, 'undelivered' | 'build'>,
  scopeId: string,
  deliver: (digest: DeliverableDigest) => Promise<DeliveryOutcome>,
): Promise<number> {
  const waiting = await digestBook.undelivered(scopeId);
  const now = new Date();
  const digest = await digestBook.build(scopeId, { periodEnd: now, now });
  let sent = 0;
  for (const d of [...waiting, ...(digest.status === 'pending' ? [digest] : [])]) {
    const outcome = await deliver(d);
    if (outcome === 'sent') sent++;
    if (outcome === 'failed') throw new Error('the digest could not be sent');
  }
  return sent;
}
