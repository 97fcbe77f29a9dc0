/**
 * Who a memory is about, in a scope where several people talk (a group). A turn records its
 * speaker (`Episode.authorId`, the channel's id for them, beside the display name `author`); a
 * memory records its subject (`Memory.subjectId`, `subjectName`): the one speaker whose own turns
 * it was learned from. Evidence from several people gives no subject (a fact about the group, or
 * about several of them), and nothing is guessed from names in the text: only what was said by
 * whom decides.
 *
 * Two rules follow from it, kept here so every door applies them alike:
 * - a group's memory names its subject rather than "the user" (a group has no single user, so
 *   "The user is vegetarian" would be about nobody in particular): {@link nameTheSubject};
 * - a member's reach in a group ({@link aboutSpeaker}) is what is about them: memories whose
 *   subject they are, or, without a subject, that were learned from something they said.
 */
import type { Prisma } from '../../storage/prisma';
import { isRelayedNote, relayedFromOf } from './memory-guards';

/** The person a memory is about: their channel id and the name they went by when it was learned. */
export interface Subject {
  readonly id: string;
  readonly name: string;
}

type Speaking = { id: string; role: string; author: string | null; authorId: string | null; content: string; metadata: unknown; timestamp: Date };

type Tx = Prisma.TransactionClient;

const SPEAKING = { id: true, role: true, author: true, authorId: true, content: true, metadata: true, timestamp: true } as const;

/**
 * The one speaker of the person's turns among `episodeIds` (an agent note relaying someone counts
 * as the turn it relays), or null when they are several, unknown (a turn without a speaker id),
 * or none. The name is the one of their latest turn (people rename themselves).
 */
export async function subjectOfEvidence(tx: Pick<Tx, 'episode'>, scopeId: string, episodeIds: readonly string[]): Promise<Subject | null> {
  if (episodeIds.length === 0) return null;
  const cited: Speaking[] = await tx.episode.findMany({ where: { scopeId, id: { in: [...episodeIds] } }, select: SPEAKING });
  const relayedIds = cited.filter((e) => isRelayedNote(e)).map((e) => relayedFromOf(e)!);
  const relayed: Speaking[] = relayedIds.length === 0 ? [] : await tx.episode.findMany({ where: { scopeId, id: { in: relayedIds } }, select: SPEAKING });
  const turns = [...cited.filter((e) => e.role === 'user'), ...relayed.filter((e) => e.role === 'user')];
  if (turns.length === 0 || turns.some((t) => t.authorId === null)) return null;
  const ids = new Set(turns.map((t) => t.authorId!));
  if (ids.size !== 1) return null;
  const latest = [...turns].sort((a, b) => b.timestamp.getTime() - a.timestamp.getTime())[0]!;
  const [id] = ids;
  return { id: id!, name: latest.author?.trim() || id! };
}

/** Words a model uses for the person it was told about, which in a group say nobody in particular. */
const NOBODY_IN_PARTICULAR = /\b(?:the user|the owner|the person)('s|’s)?(?=\W|$)/gi;

/**
 * A group memory's text with "the user" (or "the owner", "the person") replaced by the subject's
 * name, keeping the possessive ("The user's sister" -> "Ana's sister"). A text that already names
 * someone is left as it is.
 */
export function nameTheSubject(content: string, subject: Subject): string {
  return content.replace(NOBODY_IN_PARTICULAR, (_match, possessive: string | undefined) => `${subject.name}${possessive ?? ''}`);
}

/**
 * The filter of the memories a member of a group reaches: the ones about them (their subject),
 * and the ones without a subject learned from something they said. Another member's memory is
 * never in it, even when the member's words confirmed it.
 */
export function aboutSpeaker(speakerId: string): Prisma.MemoryWhereInput {
  return { OR: [{ subjectId: speakerId }, { subjectId: null, sources: { some: { episode: { authorId: speakerId } } } }] };
}

/** Whether the memory of the scope is in the member's reach ({@link aboutSpeaker}). */
export async function isAboutSpeaker(db: Pick<Tx, 'memory'>, scopeId: string, memoryId: string, speakerId: string): Promise<boolean> {
  return (await db.memory.count({ where: { scopeId, id: memoryId, ...aboutSpeaker(speakerId) } })) > 0;
}

/**
 * What a write learns about its subject: who the evidence is about, and whether the scope is a
 * group (where the text must name them). One read of the scope and of the cited turns.
 */
export async function speakerOfWrite(
  tx: Pick<Tx, 'episode' | 'scope'>,
  scopeId: string,
  evidence: readonly string[],
): Promise<{ readonly subject: Subject | null; readonly group: boolean }> {
  const scope = await tx.scope.findUnique({ where: { id: scopeId }, select: { kind: true } });
  return { subject: await subjectOfEvidence(tx, scopeId, evidence), group: scope?.kind === GROUP_KIND };
}

/** The scope kind of a chat several people share (src/agent/inbound-message.ts SCOPE_KINDS). */
const GROUP_KIND = 'group';
