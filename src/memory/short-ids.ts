/**
 * Short ids for prompts: the model sees "episode 3" and "memory 7", never a UUID (shorter
 * prompts, fewer copying mistakes). The map turns them back; a number the prompt did not show
 * resolves to undefined and the planner rejects the operation that used it.
 */
export class ShortIds {
  private readonly toReal: string[] = [];
  private readonly toShort = new Map<string, number>();

  /** The short number of a real id, assigning the next one on first sight. */
  add(realId: string): number {
    const known = this.toShort.get(realId);
    if (known !== undefined) return known;
    this.toReal.push(realId);
    this.toShort.set(realId, this.toReal.length);
    return this.toReal.length;
  }

  real(short: number): string | undefined {
    return Number.isInteger(short) && short >= 1 ? this.toReal[short - 1] : undefined;
  }

  short(realId: string): number | undefined {
    return this.toShort.get(realId);
  }

  get size(): number {
    return this.toReal.length;
  }
}
