import { describe, expect, it } from '@jest/globals';
import { isRestatement } from '../../../src/memory/memories/restatements';

// Pairs the memory bench found left as two active memories under USE-lite (cosine >= 0.9):
// the same fact framed with other verbs.
describe('restatements framed with other verbs', () => {
  it('are one fact: framing words around the same value', () => {
    expect(isRestatement('The user has a dog named Milo.', 'The user owns a dog, Milo.', undefined)).toBe(true);
    expect(isRestatement("The user's dog is called Milo.", 'The user has a dog named Milo.', undefined)).toBe(true);
    expect(isRestatement('The user lives in Denver.', 'The user resides in Denver.', undefined)).toBe(true);
    expect(isRestatement('The user plays the violin.', 'The user practices the violin.', undefined)).toBe(true);
    expect(isRestatement('The user enjoys photography.', "The user's hobby is photography.", undefined)).toBe(true);
    expect(isRestatement('The user enjoys pottery.', 'The user is into pottery.', 0.93)).toBe(true);
    expect(isRestatement('The user is a chef by profession.', 'The user is employed as a chef.', undefined)).toBe(true);
    expect(isRestatement('The user works as an electrician.', 'The user has a job as an electrician.', undefined)).toBe(true);
  });

  it('are not one fact when the value or the relation changes, whatever the cosine', () => {
    expect(isRestatement('The user lives in Berlin.', 'The user resides in Munich.', 0.95)).toBe(false);
    expect(isRestatement('The user likes Denver.', 'The user lives in Denver.', 0.95)).toBe(false);
    expect(isRestatement('The user has a dog named Milo.', 'The user has a cat named Milo.', 0.95)).toBe(false);
    expect(isRestatement('The user loves coffee.', 'The user hates coffee.', 0.95)).toBe(false);
    expect(isRestatement('The user enjoys tea.', 'The user enjoys coffee.', 0.95)).toBe(false);
    expect(isRestatement('The user works as a chef.', 'The user works as a nurse.', 0.95)).toBe(false);
    expect(isRestatement('The user works in Denver.', 'The user lives in Denver.', 0.95)).toBe(false);
    expect(isRestatement('Ana has a cousin called Person0', 'Ana has a cousin named Person1', undefined)).toBe(false);
  });
});
