/**
 * What one forget changes, counted where it changes it: inside the forget's transaction, by reading
 * the scope before the work and after it. The owner is shown these counts before confirming (the
 * preview runs the very same forget in a transaction that is rolled back, forget-service.ts) and
 * again after, so what the question says is what the confirmation does: messages replaced by the
 * placeholder, memories removed, model-written summaries dropped (of a message or a conversation),
 * people and things deleted or changed, reminders deleted, export files rewritten or deleted.
 *
 * The export files are scrubbed here too, as the last step of the work (export-files.ts), with
 * what the forget changed in the scope's export (export-gone.ts).
 */
import { plural } from '../../shared/plural';
import { FORGOTTEN_TEXT, type Tx } from './redact-derived';
import { scopeExportFiles, scrubExportFiles, type ExportFile, type ExportLocation } from './export-files';
import { goneBetween, type ExportView, type ExportViewReader } from './export-gone';

/** What a forget changes (or, in a preview, would change). */
export interface ForgetCounts {
  /** Memory rows removed (every version of every chain). */
  readonly memories: number;
  /** Messages (the person's and the agent's) whose text is replaced by the placeholder. */
  readonly messages: number;
  /** Model-written summaries dropped: of a message (also of one replaced) or of a conversation. */
  readonly summaries: number;
  /** People and things deleted, or whose profile lost an attribute or an observation. */
  readonly entities: number;
  /** Export files Nocturne wrote that are rewritten or deleted. */
  readonly files: number;
  /** Reminders deleted because their text holds the words (reminder-forget.ts). */
  readonly reminders: number;
}

/** No change at all. */
export const NO_CHANGE: ForgetCounts = { memories: 0, messages: 0, summaries: 0, entities: 0, files: 0, reminders: 0 };

/** Whether a forget changes anything. */
export function changesAnything(counts: ForgetCounts): boolean {
  return Object.values(counts).some((n) => n > 0);
}

/**
 * What changes besides the memories, in words (each part only when there is some): "3 messages
 * (replaced by a placeholder)", "1 summary", "1 person or thing", "2 export files". The chat
 * commands and the CLI say it the same way before and after, so the two can be compared.
 */
export function describeOtherChanges(counts: ForgetCounts): string[] {
  return [
    ...(counts.messages > 0 ? [`${plural(counts.messages, 'message')} (replaced by a placeholder)`] : []),
    ...(counts.summaries > 0 ? [plural(counts.summaries, 'summary', 'summaries')] : []),
    ...(counts.entities > 0 ? [plural(counts.entities, 'person or thing', 'people or things')] : []),
    ...(counts.files > 0 ? [plural(counts.files, 'export file')] : []),
    ...(counts.reminders > 0 ? [plural(counts.reminders, 'reminder')] : []),
  ];
}

/** Where the scope's export files are, and how their days are rendered. */
export interface ExportSetting extends Omit<ExportLocation, 'scope'> {
  readonly defaultTimeZone: string;
  /** Reads the scope's export before and after the work (absent: the files lose the matched words only). */
  readonly readView?: ExportViewReader;
}

interface Snapshot {
  readonly summaries: number;
  /** Entity id -> what of its profile a forget can change. */
  readonly entities: Map<string, string>;
  readonly messages: number;
  readonly reminders: number;
}

async function snapshot(tx: Tx, scopeId: string): Promise<Snapshot> {
  const [episodeSummaries, conversationSummaries, messages, entities, reminders] = await Promise.all([
    tx.episode.count({ where: { scopeId, summary: { not: null } } }),
    tx.conversation.count({ where: { scopeId, summary: { not: null } } }),
    tx.episode.count({ where: { scopeId, NOT: { content: FORGOTTEN_TEXT } } }),
    tx.entity.findMany({ where: { scopeId }, select: { id: true, name: true, key: true, attributes: true, _count: { select: { observations: true } } } }),
    tx.reminder.count({ where: { scopeId } }),
  ]);
  const fingerprints = new Map(entities.map((e) => [e.id, JSON.stringify([e.name, e.key, e.attributes, e._count.observations])]));
  return { summaries: episodeSummaries + conversationSummaries, entities: fingerprints, messages, reminders };
}

/** A forget's effects being measured: started before the work, finished after it. */
export interface EffectsProbe {
  /**
   * Counts what changed since the probe started and scrubs the export files (only says which would
   * change with `dryRun`). `removedMemories` comes from the work (the rows are gone by now).
   */
  finish(tx: Tx, params: { removedMemories: number; holds: (text: string) => boolean; dryRun: boolean }): Promise<ForgetCounts>;
}

/** Starts measuring a forget of `scope` inside its transaction `tx`, before any of the work. */
export async function startEffects(tx: Tx, scope: { id: string; key: string }, exports: ExportSetting | undefined): Promise<EffectsProbe> {
  const before = await snapshot(tx, scope.id);
  let files: ExportFile[] = [];
  let view: ExportView | undefined;
  if (exports) {
    files = await scopeExportFiles({ ...exports, scope });
    // The scope's export is read twice only when there is a file to scrub.
    if (files.length > 0 && exports.readView) view = await exports.readView(tx, scope.id, exports.defaultTimeZone);
  }
  return {
    async finish(tx2, { removedMemories, holds, dryRun }) {
      const after = await snapshot(tx2, scope.id);
      let entities = 0;
      for (const [id, print] of before.entities) if (after.entities.get(id) !== print) entities++;
      let changedFiles = 0;
      if (exports && files.length > 0) {
        const gone =
          view && exports.readView
            ? goneBetween(view, await exports.readView(tx2, scope.id, exports.defaultTimeZone))
            : { goneLines: new Set<string>(), goneStrings: new Set<string>() };
        const scrub = await scrubExportFiles({ ...exports, scope, files, holds, ...gone, dryRun });
        changedFiles = scrub.rewritten.length + scrub.deleted.length;
      }
      return {
        memories: removedMemories,
        messages: Math.max(0, before.messages - after.messages),
        summaries: Math.max(0, before.summaries - after.summaries),
        entities,
        files: changedFiles,
        reminders: Math.max(0, before.reminders - after.reminders),
      };
    },
  };
}
