import { describe, expect, it } from '@jest/globals';
import { plural, pluralWord } from '../../../src/shared/plural';

describe('plural', () => {
  it('says one thing in the singular and any other count in the plural', () => {
    expect(plural(1, 'memory', 'memories')).toBe('1 memory');
    expect(plural(0, 'memory', 'memories')).toBe('0 memories');
    expect(plural(2, 'memory', 'memories')).toBe('2 memories');
    expect(plural(1, 'daily log')).toBe('1 daily log');
    expect(plural(26, 'episode')).toBe('26 episodes');
    expect(pluralWord(1, 'It is', 'They are')).toBe('It is');
    expect(pluralWord(3, 'It is', 'They are')).toBe('They are');
    expect(pluralWord(3, 'episode')).toBe('episodes');
  });
});
