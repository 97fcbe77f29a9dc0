/**
 * Leave-one-group-out cross-validation (what `eval locomo --cv` runs): a group's items are never
 * used to choose the parameters it is measured with, and the choice on the other groups is the
 * one measured.
 */
import { describe, expect, it } from '@jest/globals';
import { crossValidate, leaveOneGroupOut, type GridPoint } from '../../../../src/evaluation/cross-validation';

interface Item {
  readonly group: string;
  readonly id: number;
}

/**
 * Groups "a"-"d" score best at w = 0.2; group "big" has more items than the four together and
 * scores best at w = 0.8. Tuned with "big" among the items, the choice is 0.8; without it, 0.2.
 */
function items(): Item[] {
  const out: Item[] = [];
  let id = 0;
  for (const group of ['a', 'b', 'c', 'd']) for (let i = 0; i < 3; i++) out.push({ group, id: id++ });
  for (let i = 0; i < 20; i++) out.push({ group: 'big', id: id++ });
  return out;
}

const preferred = (group: string) => (group === 'big' ? 0.8 : 0.2);
const figureOf = (point: GridPoint, item: Item) => [1 - Math.abs(point.w! - preferred(item.group))];

describe('leaveOneGroupOut', () => {
  it('holds each group out once, in first-seen order, and tunes on all the others', () => {
    const splits = leaveOneGroupOut(items());
    expect(splits.map((s) => s.heldOut)).toEqual(['a', 'b', 'c', 'd', 'big']);
    for (const split of splits) {
      expect(split.test.length).toBeGreaterThan(0);
      expect(split.test.every((item) => item.group === split.heldOut)).toBe(true);
      expect(split.tune.some((item) => item.group === split.heldOut)).toBe(false);
      expect(split.tune.length + split.test.length).toBe(items().length);
    }
  });
});

describe('crossValidate', () => {
  it('chooses each fold on the other groups only and measures the held-out group at that choice', async () => {
    const calls: Array<{ w: number; group: string }> = [];
    const outcome = await crossValidate({
      items: items(),
      grid: { w: [0.2, 0.5, 0.8] },
      start: { w: 0.5 },
      measure: async (point, item) => {
        calls.push({ w: point.w!, group: item.group });
        return figureOf(point, item);
      },
      objective: (means) => means[0]!,
    });
    const byGroup = Object.fromEntries(outcome.folds.map((f) => [f.heldOut, f]));
    // Held out, "big" is tuned on a-d (best 0.2) and measured there, although 0.8 suits it:
    // had its own items counted, they would outweigh the four others and choose 0.8.
    expect(byGroup.big!.point).toEqual({ w: 0.2 });
    expect(byGroup.big!.measured).toHaveLength(20);
    for (const m of byGroup.big!.measured) expect(m.figures[0]).toBeCloseTo(0.4, 9);
    // Held out, "a" is tuned on b, c, d and big together, where big's items decide: 0.8.
    for (const g of ['a', 'b', 'c', 'd']) expect(byGroup[g]!.point).toEqual({ w: 0.8 });
    expect(byGroup.a!.measured.every((m) => m.item.group === 'a')).toBe(true);
    // On everything together, big's items decide.
    expect(outcome.onAll).toEqual({ w: 0.8 });
    // Every (point, item) pair was measured once; the folds share the work.
    expect(calls.length).toBe(outcome.measurements);
    expect(outcome.points).toBe(3);
    expect(new Set(calls.map((c) => `${c.w}/${c.group}`)).size).toBe(3 * 5);
    expect(calls.length).toBe(3 * items().length);
  });

  it('never measures the held-out group during its own tuning', async () => {
    // The first fold runs before any other, so every measurement before its held-out items are
    // measured at the chosen point is a tuning one: none may be of the held-out group. Run with
    // each of two groups first.
    for (const first of ['a', 'big']) {
      const ordered = [...items().filter((item) => item.group === first), ...items().filter((item) => item.group !== first)];
      const seen: Array<{ w: number; group: string }> = [];
      const outcome = await crossValidate({
        items: ordered,
        grid: { w: [0.2, 0.5, 0.8] },
        start: { w: 0.5 },
        measure: async (point, item) => {
          seen.push({ w: point.w!, group: item.group });
          return figureOf(point, item);
        },
        objective: (means) => means[0]!,
      });
      const fold = outcome.folds[0]!;
      expect(fold.heldOut).toBe(first);
      const firstOfHeldOut = seen.findIndex((s) => s.group === first);
      const tuning = seen.slice(0, firstOfHeldOut);
      expect(tuning.length).toBeGreaterThan(0);
      expect(tuning.some((s) => s.group === first)).toBe(false);
      const measuredThen = seen.slice(firstOfHeldOut, firstOfHeldOut + fold.measured.length);
      expect(measuredThen.every((s) => s.group === first && s.w === fold.point.w)).toBe(true);
    }
  });

  it('keeps the start when nothing on the grid does better, and moves one parameter at a time to the best', async () => {
    const flat = await crossValidate({
      items: items(),
      grid: { w: [0.2, 0.5, 0.8] },
      start: { w: 0.5 },
      measure: async () => [0.5],
      objective: (means) => means[0]!,
    });
    expect(flat.onAll).toEqual({ w: 0.5 });
    // Two parameters, the best at x = 1, y = 2, reached from (0, 0).
    const two = await crossValidate({
      items: items(),
      grid: { x: [0, 1, 2], y: [0, 1, 2] },
      start: { x: 0, y: 0 },
      measure: async (p) => [-Math.abs(p.x! - 1) - Math.abs(p.y! - 2)],
      objective: (means) => means[0]!,
    });
    expect(two.onAll).toEqual({ x: 1, y: 2 });
  });
});
