/**
 * The VectorIndex contract: what every adapter (sqlite-vec, Qdrant, in memory) must do, run by each
 * *.int.test.ts file against real storage. Scope isolation is checked with identical vectors in two
 * scopes, because that is where a missing filter would show.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { IndexIdentity, VectorIndex, VectorKind, VectorRecord } from '../../src/memory/vectors/vector-index';

export interface VectorIndexContractOptions {
  readonly name: string;
  /** Why the suite cannot run here (it is then reported as skipped, with the reason). */
  readonly skip?: () => string | undefined;
  /**
   * A new, not yet initialized index on this suite's storage. Every call must reach the same
   * storage (the same file, the same server and collection prefix), which must be empty before the
   * first call.
   */
  create(): Promise<VectorIndex>;
  /** Removes the suite's storage; called once at the end with an initialized index. */
  destroy?(index: VectorIndex): Promise<void>;
}

const DIMENSION = 8;
const IDENTITY: IndexIdentity = { embedder: 'test:contract-8', dimension: DIMENSION };

/** A unit vector from its components (the rest zero). */
function unit(...values: number[]): Float32Array {
  const vector = new Float32Array(DIMENSION);
  vector.set(values);
  const length = Math.hypot(...vector);
  return vector.map((value) => value / length);
}

/** The i-th basis vector, optionally of another dimension. */
function axis(i: number, dimension = DIMENSION): Float32Array {
  const vector = new Float32Array(dimension);
  vector[i] = 1;
  return vector;
}

function record(scopeId: string, id: string, vector: Float32Array, kind: VectorKind = 'episode'): VectorRecord {
  return { scopeId, id, kind, vector };
}

export function describeVectorIndexContract(options: VectorIndexContractOptions): void {
  const skipReason = options.skip?.();
  if (skipReason) {
    describe(`vector index contract: ${options.name}`, () => {
      it.skip(`skipped: ${skipReason}`, () => undefined);
    });
    return;
  }

  describe(`vector index contract: ${options.name}`, () => {
    const opened: VectorIndex[] = [];
    let index: VectorIndex;
    let scopeA: string;
    let scopeB: string;

    async function open(): Promise<{ index: VectorIndex; identity: IndexIdentity | null }> {
      const created = await options.create();
      opened.push(created);
      return { index: created, identity: await created.init() };
    }

    beforeEach(() => {
      scopeA = `scope-a-${randomUUID()}`;
      scopeB = `scope-b-${randomUUID()}`;
    });

    afterEach(async () => {
      for (const each of opened.splice(0)) await each.close();
    });

    afterAll(async () => {
      if (!options.destroy) return;
      const { index: last } = await open();
      await options.destroy(last);
      await last.close();
    });

    it('init() on fresh storage returns null (no identity yet)', async () => {
      const { identity } = await open();
      expect(identity).toBeNull();
    });

    describe('with an identity', () => {
      beforeEach(async () => {
        ({ index } = await open());
        await index.clear();
        await index.setIdentity(IDENTITY);
      });

      it('records the identity: another instance on the same storage init()s to it', async () => {
        const { identity } = await open();
        expect(identity).toEqual(IDENTITY);
        await index.setIdentity(IDENTITY); // the same identity again changes nothing
        expect((await open()).identity).toEqual(IDENTITY);
      });

      it('returns the nearest first, with cosine similarity as the score', async () => {
        const ids = { same: randomUUID(), near: randomUUID(), orthogonal: randomUUID(), opposite: randomUUID() };
        await index.upsert([
          record(scopeA, ids.orthogonal, unit(0, 1)),
          record(scopeA, ids.opposite, unit(-1)),
          record(scopeA, ids.same, unit(1)),
          record(scopeA, ids.near, unit(1, 1)),
        ]);
        const hits = await index.search({ scopeId: scopeA, vector: unit(1), limit: 10 });
        expect(hits.map((hit) => hit.id)).toEqual([ids.same, ids.near, ids.orthogonal, ids.opposite]);
        expect(hits[0]!.score).toBeCloseTo(1, 4);
        expect(hits[1]!.score).toBeCloseTo(Math.SQRT1_2, 4);
        expect(hits[2]!.score).toBeCloseTo(0, 4);
        expect(hits[3]!.score).toBeCloseTo(-1, 4);
        expect(hits.every((hit) => hit.kind === 'episode')).toBe(true);
      });

      it('keeps scopes apart: identical vectors of another scope are never returned nor counted', async () => {
        const mine = [randomUUID(), randomUUID()];
        const theirs = [randomUUID(), randomUUID(), randomUUID()];
        await index.upsert([record(scopeA, mine[0]!, unit(1)), record(scopeA, mine[1]!, unit(1, 1), 'memory')]);
        await index.upsert([record(scopeB, theirs[0]!, unit(1)), record(scopeB, theirs[1]!, unit(1, 1), 'memory'), record(scopeB, theirs[2]!, unit(1, 0.1))]);
        const hits = await index.search({ scopeId: scopeA, vector: unit(1), limit: 50 });
        expect(hits.map((hit) => hit.id).sort()).toEqual([...mine].sort());
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 50, kind: 'memory' })).toEqual([expect.objectContaining({ id: mine[1] })]);
        expect(await index.count(scopeA)).toBe(2);
        expect(await index.count(scopeA, 'memory')).toBe(1);
        expect(await index.count(scopeB)).toBe(3);
        expect(await index.search({ scopeId: `scope-c-${randomUUID()}`, vector: unit(1), limit: 5 })).toEqual([]);
      });

      it('filters by kind in search and count', async () => {
        const episode = randomUUID();
        const memory = randomUUID();
        await index.upsert([record(scopeA, episode, unit(1, 0.2), 'episode'), record(scopeA, memory, unit(1, 0.4), 'memory')]);
        const memories = await index.search({ scopeId: scopeA, vector: unit(1), limit: 10, kind: 'memory' });
        expect(memories.map((hit) => [hit.id, hit.kind])).toEqual([[memory, 'memory']]);
        const episodes = await index.search({ scopeId: scopeA, vector: unit(1), limit: 10, kind: 'episode' });
        expect(episodes.map((hit) => [hit.id, hit.kind])).toEqual([[episode, 'episode']]);
        expect((await index.search({ scopeId: scopeA, vector: unit(1), limit: 10 })).map((hit) => hit.id)).toEqual([episode, memory]);
        expect(await index.count(scopeA, 'episode')).toBe(1);
        expect(await index.count(scopeA, 'memory')).toBe(1);
      });

      it('upserting an id again replaces its vector and kind (idempotent, count unchanged)', async () => {
        const id = randomUUID();
        const other = randomUUID();
        await index.upsert([record(scopeA, id, unit(1)), record(scopeA, other, unit(0, 0, 1))]);
        await index.upsert([record(scopeA, id, unit(1))]);
        expect(await index.count(scopeA)).toBe(2);

        await index.upsert([record(scopeA, id, unit(0, 1), 'memory')]);
        expect(await index.count(scopeA)).toBe(2);
        const [best] = await index.search({ scopeId: scopeA, vector: unit(0, 1), limit: 1 });
        expect(best).toEqual({ id, kind: 'memory', score: expect.any(Number) });
        expect(best!.score).toBeCloseTo(1, 4);
        const oldDirection = await index.search({ scopeId: scopeA, vector: unit(1), limit: 5 });
        expect(oldDirection.find((hit) => hit.id === id)!.score).toBeCloseTo(0, 4);
        expect(await index.count(scopeA, 'episode')).toBe(1);

        // In one batch, the last record of an id wins.
        await index.upsert([record(scopeA, other, unit(1)), record(scopeA, other, unit(0, 0, 0, 1))]);
        const [top] = await index.search({ scopeId: scopeA, vector: unit(0, 0, 0, 1), limit: 1 });
        expect(top!.id).toBe(other);
        expect(top!.score).toBeCloseTo(1, 4);
      });

      it('the same id in two scopes is two vectors: writing one never touches the other', async () => {
        const id = randomUUID();
        await index.upsert([record(scopeA, id, unit(1))]);
        await index.upsert([record(scopeB, id, unit(0, 1), 'memory')]);
        const [inA] = await index.search({ scopeId: scopeA, vector: unit(1), limit: 1 });
        expect(inA).toEqual({ id, kind: 'episode', score: expect.any(Number) });
        expect(inA!.score).toBeCloseTo(1, 4);
        expect(await index.count(scopeA)).toBe(1);
        expect(await index.count(scopeB)).toBe(1);
      });

      it('delete removes only the named ids of that scope', async () => {
        const [keep, drop, shared] = [randomUUID(), randomUUID(), randomUUID()];
        await index.upsert([record(scopeA, keep, unit(1)), record(scopeA, drop, unit(1, 1)), record(scopeA, shared, unit(1, 2))]);
        await index.upsert([record(scopeB, shared, unit(1, 2)), record(scopeB, drop, unit(1, 1))]);
        await index.delete(scopeA, [drop, shared, randomUUID()]);
        expect((await index.search({ scopeId: scopeA, vector: unit(1), limit: 10 })).map((hit) => hit.id)).toEqual([keep]);
        expect(await index.count(scopeA)).toBe(1);
        expect((await index.search({ scopeId: scopeB, vector: unit(1), limit: 10 })).map((hit) => hit.id).sort()).toEqual([drop, shared].sort());
        await index.delete(scopeA, []);
        expect(await index.count(scopeA)).toBe(1);
      });

      it('deleteScope removes every vector of that scope and nothing else', async () => {
        await index.upsert([record(scopeA, randomUUID(), unit(1)), record(scopeA, randomUUID(), unit(0, 1), 'memory')]);
        const survivor = randomUUID();
        await index.upsert([record(scopeB, survivor, unit(1))]);
        await index.deleteScope(scopeA);
        expect(await index.count(scopeA)).toBe(0);
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 10 })).toEqual([]);
        expect((await index.search({ scopeId: scopeB, vector: unit(1), limit: 10 })).map((hit) => hit.id)).toEqual([survivor]);
        await index.deleteScope(`scope-c-${randomUUID()}`); // an unknown scope is not an error
      });

      it('clear empties the index and forgets the identity', async () => {
        await index.upsert([record(scopeA, randomUUID(), unit(1)), record(scopeB, randomUUID(), unit(1))]);
        await index.clear();
        expect(await index.count(scopeA)).toBe(0);
        expect(await index.count(scopeB)).toBe(0);
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 10 })).toEqual([]);
        expect((await open()).identity).toBeNull();
        await expect(index.upsert([record(scopeA, randomUUID(), unit(1))])).rejects.toMatchObject({ code: 'vectors.identity_missing' });
      });

      it('refuses a vector of the wrong dimension with vectors.dimension_mismatch', async () => {
        await expect(index.upsert([record(scopeA, randomUUID(), axis(0, DIMENSION + 1))])).rejects.toMatchObject({
          code: 'vectors.dimension_mismatch',
          hint: expect.any(String),
        });
        await expect(index.search({ scopeId: scopeA, vector: axis(0, DIMENSION - 1), limit: 3 })).rejects.toMatchObject({
          code: 'vectors.dimension_mismatch',
        });
        // A batch with one bad vector stores nothing.
        await expect(index.upsert([record(scopeA, randomUUID(), unit(1)), record(scopeA, randomUUID(), axis(0, 3))])).rejects.toMatchObject({
          code: 'vectors.dimension_mismatch',
        });
        expect(await index.count(scopeA)).toBe(0);
      });

      it('setIdentity with a new dimension empties the index and takes vectors of the new size', async () => {
        await index.upsert([record(scopeA, randomUUID(), unit(1)), record(scopeB, randomUUID(), unit(1))]);
        const next: IndexIdentity = { embedder: 'test:contract-12', dimension: 12 };
        await index.setIdentity(next);
        expect(await index.count(scopeA)).toBe(0);
        expect(await index.count(scopeB)).toBe(0);
        expect((await open()).identity).toEqual(next);
        const id = randomUUID();
        await index.upsert([record(scopeA, id, axis(11, 12))]);
        const hits = await index.search({ scopeId: scopeA, vector: axis(11, 12), limit: 3 });
        expect(hits.map((hit) => hit.id)).toEqual([id]);
        await expect(index.upsert([record(scopeA, randomUUID(), unit(1))])).rejects.toMatchObject({ code: 'vectors.dimension_mismatch' });
      });

      it('setIdentity with another embedder of the same dimension empties the index too', async () => {
        await index.upsert([record(scopeA, randomUUID(), unit(1))]);
        await index.setIdentity({ embedder: 'test:another-8', dimension: DIMENSION });
        expect(await index.count(scopeA)).toBe(0);
      });

      it("get returns the stored vectors of one scope by id, never another scope's", async () => {
        const [a, b, theirs] = [randomUUID(), randomUUID(), randomUUID()];
        await index.upsert([record(scopeA, a, unit(1, 2)), record(scopeA, b, unit(0, 0, 1), 'memory')]);
        await index.upsert([record(scopeB, theirs, unit(1)), record(scopeB, a, unit(0, 1))]);
        const got = await index.get(scopeA, [a, b, theirs, randomUUID()]);
        expect(got.map((r) => [r.id, r.kind, r.scopeId]).sort()).toEqual(
          [
            [a, 'episode', scopeA],
            [b, 'memory', scopeA],
          ].sort(),
        );
        const gotA = got.find((r) => r.id === a)!;
        expect(gotA.vector).toBeInstanceOf(Float32Array);
        unit(1, 2).forEach((value, i) => expect(gotA.vector[i]).toBeCloseTo(value, 5));
        expect(await index.get(scopeA, [])).toEqual([]);
        // Read back and upserted elsewhere, a vector keeps its direction.
        await index.upsert([{ ...gotA, scopeId: scopeB, id: randomUUID() }]);
        const [best] = await index.search({ scopeId: scopeB, vector: unit(1, 2), limit: 1 });
        expect(best!.score).toBeCloseTo(1, 4);
      });

      it('returns [] for a scope with no vectors', async () => {
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 10 })).toEqual([]);
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 10, kind: 'memory' })).toEqual([]);
        expect(await index.count(scopeA)).toBe(0);
      });

      it('respects the limit and returns the best ones, best first', async () => {
        const records = Array.from({ length: 20 }, (_, i) => record(scopeA, randomUUID(), unit(1, i / 4)));
        await index.upsert(records);
        const hits = await index.search({ scopeId: scopeA, vector: unit(1), limit: 5 });
        expect(hits.map((hit) => hit.id)).toEqual(records.slice(0, 5).map((each) => each.id));
        for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 1 })).toHaveLength(1);
        expect(await index.search({ scopeId: scopeA, vector: unit(1), limit: 100 })).toHaveLength(20);
      });
    });
  });
}
