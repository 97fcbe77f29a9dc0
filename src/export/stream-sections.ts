/**
 * What the first pass of a streamed import remembers of each array of rows while it reads them one
 * at a time: counts, ids and keys (hashed when long) for the uniqueness checks, the references to
 * check once every row was seen, and the first issues of each kind. Bounded by the number of rows,
 * never by their texts.
 */
import { createHash } from 'node:crypto';
import type { ValidationError } from '../shared/errors';
import { MAX_LISTED_ISSUES, episodeIssues, invalidDocument } from './import-validation';
import type { ScopeExport } from './scope-document';
import type { RowSection, Span } from './stream-plan';

/** The first issues of one kind, and how many there were. */
export class Issues {
  readonly listed: string[] = [];
  total = 0;
  readonly add = (issue: string): void => {
    this.total++;
    if (this.listed.length < MAX_LISTED_ISSUES) this.listed.push(issue);
  };
}

/** Keeps what a uniqueness check needs of a long key (an entity key, an externalId). */
const digest = (text: string): string => (text.length <= 40 ? text : createHash('sha256').update(text).digest('base64'));

/** What one array of rows has shown so far (a repeated key starts it again, as JSON.parse keeps the last). */
export class SectionState {
  readonly zod = new Issues();
  readonly texts = new Issues();
  count = 0;
  nested = 0;
  span: Span | null = null;
  readonly ids = new Set<string>();
  readonly duplicateIds = new Issues();
  /** Link triples, entity keys, digest periodEnds. */
  readonly keys = new Set<string>();
  readonly duplicateKeys = new Issues();
  /** Observation ids (entities). */
  readonly innerIds = new Set<string>();
  readonly duplicateInnerIds = new Issues();
  innerIndex = 0;
  readonly tags = new Issues();
  readonly externalIds = new Set<string>();
  readonly duplicateExternalIds = new Issues();
  externalIndex = 0;
  readonly controls = new Issues();
  /** Memories: id, supersededById and sources by index; links: from and to. */
  readonly rowIds: string[] = [];
  readonly refA: Array<string | null> = [];
  readonly refB: Array<string[] | string> = [];
  readonly spans: Span[] = [];
  /** Entities: the episode each observation cites (entity index, observation index, episode id). */
  readonly observationEpisodes: Array<readonly [number, number, string]> = [];
  /** The clock episode times are checked against, read once per import. */
  readonly now = new Date();

  constructor(readonly name: RowSection) {}

  unique(set: Set<string>, key: string, stored: string, issues: Issues, at: string, what: string): void {
    if (set.has(stored)) issues.add(`${at}: duplicate ${what} ${key}`);
    set.add(stored);
  }
}

type Row<S extends RowSection> = ScopeExport[S][number];

/** What a valid row adds to its section's checks. */
export function checkRow(state: SectionState, row: unknown, i: number, span: Span): void {
  const name = state.name;
  const at = `${name}[${i}]`;
  state.unique(state.ids, (row as { id: string }).id, (row as { id: string }).id, state.duplicateIds, at, 'id');
  switch (name) {
    case 'episodes': {
      const e = row as Row<'episodes'>;
      episodeIssues(e, i, state.now, state.controls.add);
      const tags = new Set<string>();
      e.tags.forEach((t, j) => state.unique(tags, `${t.kind}:${t.value}`, `${t.kind}:${t.value}`, state.tags, `episodes[${i}].tags[${j}]`, 'tag'));
      state.nested += e.tags.length;
      if (e.externalId !== null)
        state.unique(state.externalIds, e.externalId, digest(e.externalId), state.duplicateExternalIds, `episodes[${state.externalIndex++}]`, 'externalId');
      return;
    }
    case 'memories': {
      const m = row as Row<'memories'>;
      state.rowIds.push(m.id);
      state.refA.push(m.supersededById);
      state.refB.push(m.sourceEpisodeIds);
      state.spans.push(span);
      state.nested += m.sourceEpisodeIds.length;
      return;
    }
    case 'memoryLinks': {
      const l = row as Row<'memoryLinks'>;
      const link = `${l.fromId} -> ${l.toId} (${l.kind})`;
      state.unique(state.keys, link, digest(link), state.duplicateKeys, at, 'link');
      state.refA.push(l.fromId);
      state.refB.push(l.toId);
      return;
    }
    case 'entities': {
      const e = row as Row<'entities'>;
      state.unique(state.keys, e.key, digest(e.key), state.duplicateKeys, at, 'key');
      for (const o of e.observations) state.unique(state.innerIds, o.id, o.id, state.duplicateInnerIds, `entities.observations[${state.innerIndex++}]`, 'id');
      e.observations.forEach((o, j) => {
        if (o.episodeId !== null) state.observationEpisodes.push([i, j, o.episodeId]);
      });
      state.nested += e.observations.length;
      return;
    }
    case 'digests': {
      const d = row as Row<'digests'>;
      state.unique(state.keys, d.periodEnd, d.periodEnd, state.duplicateKeys, at, 'periodEnd');
      return;
    }
    default:
      return;
  }
}

/** The issues of several kinds, in order, as one error (the first 20 listed, all counted). */
export function errorOf(groups: readonly Issues[]): ValidationError | undefined {
  const total = groups.reduce((sum, g) => sum + g.total, 0);
  if (total === 0) return undefined;
  return invalidDocument(groups.flatMap((g) => g.listed).slice(0, MAX_LISTED_ISSUES), total);
}
