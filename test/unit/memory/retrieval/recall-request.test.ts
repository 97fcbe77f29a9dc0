/**
 * Which messages open deep recall: a request to remember, in the languages the phrases cover,
 * and not a statement or an errand that merely contains the word.
 */
import { describe, expect, it } from '@jest/globals';
import { asksToRecall } from '../../../../src/memory/retrieval/recall-request';

describe('asksToRecall', () => {
  it.each([
    "Do you remember what my sister's cat is called?",
    'remember when we talked about Lisbon?',
    "Don't you remember my cat?",
    'Did I ever tell you about my grandfather?',
    'have I told you where I grew up',
    '¿Te acuerdas de mi gato?',
    'Você se lembra do meu irmão?',
    'Tu te souviens de ma sœur ?',
    'Erinnerst du dich an meinen Hund?',
    'Weißt du noch, wie mein Hund heißt?',
    'Ti ricordi di mia madre?',
  ])('asks: %s', (message) => expect(asksToRecall(message)).toBe(true));

  it.each([
    'I remembered the keys this time',
    'Please remember to buy milk',
    "My sister's cat was at the vet today",
    'Me recuerdas a tu padre',
    'What should I cook tonight?',
    '',
  ])('does not ask: %s', (message) => expect(asksToRecall(message)).toBe(false));
});
