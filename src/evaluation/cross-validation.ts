/**
 * Leave-one-group-out cross-validation with a coordinate search over a small grid: for each
 * group (a LoCoMo conversation), the parameters are chosen on the other groups' questions only,
 * then measured on the held-out group's; the held-out figures of all groups together are the
 * cross-validated ones.
 *
 * Why coordinate search: a full product of seven parameters with three values each is 2,187
 * points; starting from the current values and moving one parameter at a time to its best grid
 * value (rounds until nothing improves) visits a few dozen, and the results of a point are
 * memoized per question, so the folds share most of the work.
 */

/** A point of the grid: one value per parameter. */
export type GridPoint = Readonly<Record<string, number>>;
/** The values each parameter may take. */
export type ParamGrid = Readonly<Record<string, readonly number[]>>;

export interface CvItem {
  /** The group the item belongs to (held out together). */
  readonly group: string;
}

export interface CvParams<Q extends CvItem> {
  readonly items: readonly Q[];
  readonly grid: ParamGrid;
  /** Where the search starts (values need not be on the grid; ties keep the start). */
  readonly start: GridPoint;
  /** The figures of one item at a point (e.g. recall@5, @10, ...); called at most once per pair. */
  readonly measure: (point: GridPoint, item: Q) => Promise<readonly number[]>;
  /** What the search maximizes, from the mean figures of the tuning items. */
  readonly objective: (means: readonly number[]) => number;
  /** Rounds of the coordinate search at most (default 3). */
  readonly rounds?: number;
}

export interface Fold<Q extends CvItem> {
  readonly heldOut: string;
  /** Chosen on the other groups' items only. */
  readonly point: GridPoint;
  /** Each held-out item with its figures at the chosen point. */
  readonly measured: ReadonlyArray<{ item: Q; figures: readonly number[] }>;
}

export interface CvOutcome<Q extends CvItem> {
  readonly folds: ReadonlyArray<Fold<Q>>;
  /** The point chosen on every group together (what a default would be set to). */
  readonly onAll: GridPoint;
  /** Distinct points measured, and item measurements made. */
  readonly points: number;
  readonly measurements: number;
}

const keyOf = (point: GridPoint) =>
  JSON.stringify(
    Object.keys(point)
      .sort()
      .map((k) => [k, point[k]]),
  );

/** The groups in first-seen order, each with the items to tune on (all others) and to test on. */
export function leaveOneGroupOut<Q extends CvItem>(items: readonly Q[]): Array<{ heldOut: string; tune: Q[]; test: Q[] }> {
  const groups = [...new Set(items.map((item) => item.group))];
  return groups.map((heldOut) => ({
    heldOut,
    tune: items.filter((item) => item.group !== heldOut),
    test: items.filter((item) => item.group === heldOut),
  }));
}

/** Runs the cross-validation: one fold per group, then the choice on all groups. */
export async function crossValidate<Q extends CvItem>(params: CvParams<Q>): Promise<CvOutcome<Q>> {
  const memo = new Map<string, Map<Q, readonly number[]>>();
  let measurements = 0;
  const figuresAt = async (point: GridPoint, item: Q) => {
    const key = keyOf(point);
    const byItem = memo.get(key) ?? new Map<Q, readonly number[]>();
    memo.set(key, byItem);
    let figures = byItem.get(item);
    if (!figures) {
      figures = await params.measure(point, item);
      measurements += 1;
      byItem.set(item, figures);
    }
    return figures;
  };
  const meanAt = async (point: GridPoint, items: readonly Q[]) => {
    const sums: number[] = [];
    for (const item of items) (await figuresAt(point, item)).forEach((v, i) => (sums[i] = (sums[i] ?? 0) + v));
    return sums.map((s) => s / Math.max(1, items.length));
  };
  const tune = async (items: readonly Q[]): Promise<GridPoint> => {
    let best: GridPoint = { ...params.start };
    let bestValue = params.objective(await meanAt(best, items));
    for (let round = 0; round < (params.rounds ?? 3); round++) {
      let moved = false;
      for (const [name, values] of Object.entries(params.grid)) {
        for (const value of values) {
          if (value === best[name]) continue;
          const candidate = { ...best, [name]: value };
          const v = params.objective(await meanAt(candidate, items));
          // A move must gain more than rounding noise (1e-9), so ties keep the current point.
          if (v > bestValue + 1e-9) {
            best = candidate;
            bestValue = v;
            moved = true;
          }
        }
      }
      if (!moved) break;
    }
    return best;
  };
  const folds: Array<Fold<Q>> = [];
  for (const split of leaveOneGroupOut(params.items)) {
    const point = await tune(split.tune);
    const measured: Array<{ item: Q; figures: readonly number[] }> = [];
    for (const item of split.test) measured.push({ item, figures: await figuresAt(point, item) });
    folds.push({ heldOut: split.heldOut, point, measured });
  }
  const onAll = await tune(params.items);
  return { folds, onAll, points: memo.size, measurements };
}
