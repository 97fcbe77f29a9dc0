/**
 * The chaos suites' marker words: a scan for one marker, or for its tail (what the full-text
 * index's prefix compression may leave of it), finds no other marker. Seed 561478094 made
 * "zokulevidox" and "futilevidox" (tail "levidox"), and forget-completeness then found a purged
 * phrase in the scope that was never forgotten.
 */
import { describe, expect, it } from '@jest/globals';
import { createMarkerFactory, createRng, markerTail } from './chaos-support';

describe('marker words', () => {
  it('never hold another marker or its tail, over 2,000 seeds of 12 markers each', () => {
    const clashes: string[] = [];
    for (let seed = 561_477_000; seed < 561_479_000; seed++) {
      for (const syllables of [3, 4]) {
        const next = createMarkerFactory(createRng(seed), syllables);
        const words = Array.from({ length: 12 }, next);
        for (const a of words) for (const b of words) if (a !== b && (b.includes(a) || b.includes(markerTail(a)))) clashes.push(`seed ${seed}: ${a} in ${b}`);
      }
    }
    expect(clashes).toEqual([]);
  });
});
