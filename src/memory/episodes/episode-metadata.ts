/**
 * Metadata learned about an episode after it was stored: consolidation reads every message of a
 * batch anyway, so the same answer says what each is about (topics, entities, emotional tone,
 * task type; seed 000) and live chat becomes findable by topic and entity like imported data.
 *
 * What the source itself gave at ingest wins: an imported message's tone or task type is kept,
 * and learned topics and entities are added to its tags, never replacing them. Learned text is
 * redacted like every other text a model writes (a pasted credential never becomes a tag), and
 * cleaned and lower-cased like imported tags, so one topic has one spelling in the tag index.
 */
import type { Prisma } from '../../storage/prisma';
import { redactSecrets } from '../../shared/redact';
import { tagValues } from './normalize';

type Tx = Prisma.TransactionClient;

/** What the model said about one episode; absent fields say nothing. */
export interface LearnedEpisodeMetadata {
  readonly episodeId: string;
  readonly topics: readonly string[];
  readonly entities: readonly string[];
  readonly emotionalTone?: string;
  readonly taskType?: string;
}

/** The tag kinds of EpisodeTag that search filters on (search-filters.ts). */
const TAG_KINDS = { topics: 'topic', entities: 'entity' } as const;

function objectOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function cleanLabel(value: string | undefined): string | undefined {
  const cleaned = value === undefined ? '' : tagValues([redactSecrets(value)])[0];
  return cleaned ? cleaned : undefined;
}

/**
 * Writes what was learned about each episode of `scopeId`, inside the caller's transaction (the
 * consolidation batch's, so the metadata commits with the batch or not at all). Episodes of
 * another scope or no longer present are skipped. Returns how many episodes gained something.
 */
export async function recordLearnedMetadata(tx: Tx, scopeId: string, learned: readonly LearnedEpisodeMetadata[]): Promise<number> {
  if (learned.length === 0) return 0;
  const ids = [...new Set(learned.map((l) => l.episodeId))];
  const rows = await tx.episode.findMany({
    where: { scopeId, id: { in: ids } },
    select: { id: true, metadata: true, tags: { select: { kind: true, value: true } } },
  });
  const byId = new Map(rows.map((r) => [r.id, r]));
  let changed = 0;
  for (const item of learned) {
    const row = byId.get(item.episodeId);
    if (!row) continue;
    const metadata = objectOf(row.metadata);
    let touched = false;
    const newTags: Prisma.EpisodeTagCreateManyInput[] = [];
    for (const [field, kind] of Object.entries(TAG_KINDS) as Array<[keyof typeof TAG_KINDS, string]>) {
      const values = tagValues(item[field].map(redactSecrets));
      const had = stringsOf(metadata[field]);
      const merged = [...new Set([...had, ...values])];
      if (merged.length > had.length) {
        metadata[field] = merged;
        touched = true;
      }
      const tagged: Set<string> = new Set(row.tags.filter((t) => t.kind === kind).map((t) => t.value));
      for (const value of values.filter((v) => !tagged.has(v))) {
        tagged.add(value);
        newTags.push({ scopeId, episodeId: row.id, kind, value });
      }
    }
    for (const field of ['emotionalTone', 'taskType'] as const) {
      const value = cleanLabel(item[field]);
      if (value === undefined || typeof metadata[field] === 'string') continue;
      metadata[field] = value;
      touched = true;
    }
    if (touched) await tx.episode.update({ where: { id: row.id }, data: { metadata: metadata as Prisma.InputJsonObject } });
    if (newTags.length > 0) await tx.episodeTag.createMany({ data: newTags });
    if (touched || newTags.length > 0) changed++;
    // A later entry for the same episode sees what this one wrote.
    row.metadata = metadata as Prisma.JsonObject;
    row.tags.push(...newTags.map((t) => ({ kind: t.kind, value: t.value })));
  }
  return changed;
}
