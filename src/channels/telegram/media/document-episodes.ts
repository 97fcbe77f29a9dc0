/**
 * A read document as the person's memory: each part one episode of a conversation of its own
 * (`document:<chat>:<message>`), so it is searchable (full-text and vectors, embedded by the
 * embedding worker like any message), consolidated while Nocturne sleeps, shown to the model as
 * context, exported, and forgotten by words like anything the person said. Part ids derive from
 * the message's id, so a redelivered update stores nothing twice.
 */
import type { InboundMessage } from '../../../agent/inbound-message';
import type { EpisodeService } from '../../../memory/episodes/episode-service';

/** How a part's content starts: what it is, so the model and `/why` can tell a document from a chat line. */
export function partHeader(name: string, part: number, parts: number): string {
  return `[document \u201c${name}\u201d, part ${part} of ${parts}]`;
}

/** Stores the parts; returns how many were new (0 for a redelivery). */
export async function storeDocumentParts(
  episodes: Pick<EpisodeService, 'ingestMany' | 'normalize'>,
  message: InboundMessage,
  document: { readonly name: string; readonly fileId: string; readonly kind: string; readonly parts: readonly string[] },
): Promise<number> {
  const label = `document:${message.externalId ?? message.timestamp.getTime()}`;
  const total = document.parts.length;
  const rows = document.parts.map((text, i) =>
    episodes.normalize(
      {
        role: 'user',
        channel: message.channel,
        author: message.authorName,
        content: `${partHeader(document.name, i + 1, total)}\n${text}`,
        // One millisecond apart, so the parts keep their order wherever episodes are sorted by time.
        timestamp: new Date(message.timestamp.getTime() + i).toISOString(),
        externalId: `${label}#${i + 1}`,
        conversationId: label,
        metadata: {
          document: { name: document.name, kind: document.kind, part: i + 1, parts: total, fileId: document.fileId },
          ...(message.authorId && { authorId: message.authorId }),
        },
      },
      message.channel,
    ),
  );
  const stored = await episodes.ingestMany({ key: message.scopeKey, channel: message.channel, kind: message.scopeKind }, rows);
  return stored.inserted;
}
