/**
 * Changing what the sqlite-vec index's vectors are: recording its identity (embedder and
 * dimension) and clearing it. A new identity empties the file in a new epoch, with a vec0 table of
 * the new dimension, so vectors of two embedders never meet; the caller then re-embeds (a reindex).
 *
 * Both run in one IMMEDIATE transaction after `sync`, so two processes setting identities one
 * after the other each see the other's result; the session rereads `meta` after the commit.
 */
import { AppError } from '../../shared/errors';
import type { VecSession } from './sqlite-vec-session';
import { checkIdentity, sameIdentity } from './vector-checks';
import type { IndexIdentity } from '../../memory/vectors/vector-index';

/** The largest dimension the vec0 table is created with. */
export const MAX_DIMENSION = 8192;

/**
 * Records `next` as the identity. The same identity again keeps every vector; a fresh empty file
 * of the right dimension keeps its table; anything else empties the index first.
 */
export function setVecIdentity(session: VecSession, next: IndexIdentity): void {
  checkIdentity(next, MAX_DIMENSION);
  const connection = session.open();
  connection
    .transaction(() => {
      session.sync();
      const identity = session.identity();
      if (sameIdentity(identity, next)) return;
      const empty = (session.fixed().anyItem.get() as number | undefined) === undefined;
      if (!(identity === null && empty && session.tableDimension() === next.dimension)) session.dropAll(connection, next.dimension);
      session.fixed().metaSet.run('embedder', next.embedder);
      session.fixed().metaSet.run('dimension', String(next.dimension));
    })
    .immediate();
  session.readMeta();
}

/** Empties the index and forgets its identity (the table keeps its dimension). */
export function clearVecIndex(session: VecSession): void {
  const connection = session.open();
  connection
    .transaction(() => {
      session.sync();
      session.dropAll(connection, session.tableDimension());
      session.fixed().metaDelete.run('embedder');
    })
    .immediate();
  session.scans.clear();
  session.readMeta();
}

/** Another process gave the index a new identity between a write's checks and its transaction. */
export function requireSameIdentity(expected: IndexIdentity, actual: IndexIdentity | null): void {
  if (actual?.embedder === expected.embedder && actual.dimension === expected.dimension) return;
  const found = actual ? `${actual.embedder}/${actual.dimension}` : 'none';
  throw new AppError(`The vector index identity changed while storing (expected ${expected.embedder}/${expected.dimension}, ` + `found ${found}).`, {
    code: 'vectors.identity_changed',
    category: 'system',
    hint: 'Another process started a reindex; retry after it finishes.',
  });
}
