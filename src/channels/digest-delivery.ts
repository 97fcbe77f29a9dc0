/**
 * Delivering one digest, at most once, on any channel. The Telegram sender, Telegram's `/digest`
 * and the terminal all go through {@link deliverDigestOnce}, so no two of them can deliver the
 * same digest, nor two processes sharing the database.
 *
 * The order is: claim, send, mark.
 * 1. Claim: one conditional update moves the digest from the status and attempt count we read to
 *    `sending`; whoever's update changes the row owns the delivery, anyone else skips it.
 * 2. Send the text as it is now (read again after the claim, through the output filter), part by
 *    part (a channel with a length limit splits it). On failure before any part went out: mark it
 *    failed (a sender tries again until DIGEST_MAX_ATTEMPTS).
 * 3. On success: mark it sent.
 * The digest book ({@link DigestBook}) owns the rows; this owns the order.
 * A crash between 1 and 3 leaves the digest `sending`: it is not sent again (at most once: a
 * duplicate would be worse than a gap the person can fill with /digest); the Telegram sender logs
 * such digests at the next start and marks them sent. The same happens when some parts of a
 * long digest went out and a later one failed: resending would duplicate the parts delivered,
 * so it counts as sent, with an error in the log.
 */
import type { DeliverableDigest, DigestBook } from '../memory/digests/digest-book';
import type { Logger } from '../shared/logger';

/** `skipped`: someone else claimed it, or nothing was left to send after a /forget. */
export type DeliveryOutcome = 'sent' | 'failed' | 'skipped';

/** The digest book's verbs one delivery uses: claim, read again, mark. */
export type DeliveryBook = Pick<DigestBook, 'claim' | 'currentContent' | 'markSent' | 'markFailed'>;

/** Markdown headings and emphasis markers removed, for documents (the soul, a digest) shown as plain text. */
export function plainMarkdown(markdown: string): string {
  return markdown
    .replace(/^#{1,6}\s+/gm, '')
    .replace(/\*\*(.+?)\*\*/g, '$1')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Delivers `digest` (as plain text, in the parts `split` makes) unless someone else claimed it. */
export async function deliverDigestOnce(params: {
  digestBook: DeliveryBook;
  digest: DeliverableDigest;
  logger: Logger;
  /** Sends one part (`last`: the final one, where a channel puts its buttons); throws when it could not. */
  send: (part: string, last: boolean) => Promise<void>;
  /** The parts to send, in order (default: the whole text). */
  split?: (text: string) => string[];
  now?: () => Date;
}): Promise<DeliveryOutcome> {
  const { digestBook, digest, logger } = params;
  const now = params.now ?? (() => new Date());
  if (!(await digestBook.claim(digest))) return 'skipped';
  // Re-read: a /forget may have scrubbed it between our read and the claim.
  const fresh = await digestBook.currentContent(digest.id);
  const text = plainMarkdown(fresh ?? digest.content);
  if (text === '') {
    await digestBook.markSent(digest.id, now());
    return 'skipped';
  }
  const parts = params.split ? params.split(text) : [text];
  let delivered = 0;
  try {
    for (const [i, part] of parts.entries()) {
      await params.send(part, i === parts.length - 1);
      delivered++;
    }
  } catch (error) {
    if (delivered === 0) {
      await digestBook.markFailed(digest.id);
      logger.warn('a digest could not be sent; it will be tried again', { digestId: digest.id, scopeId: digest.scopeId, attempt: digest.attempts + 1, error });
      return 'failed';
    }
    logger.error('a long digest was only partly sent; not resending it, to avoid duplicates', {
      digestId: digest.id,
      scopeId: digest.scopeId,
      partsSent: delivered,
      parts: parts.length,
      error,
    });
  }
  await digestBook.markSent(digest.id, now());
  logger.info('digest sent', { digestId: digest.id, scopeId: digest.scopeId });
  return 'sent';
}
