/**
 * A cheap importance estimate at ingest (seed 003: heuristic first, upgraded by the model during
 * sleep). It only has to rank "my sister's wedding is on 3 May" above "ok thanks": it looks for
 * self-disclosure, commitments, dates and numbers, names, and explicit requests to remember.
 */

const SELF_DISCLOSURE = /\b(i am|i'm|i was|i have|i've|my|mine|i like|i love|i hate|i prefer|i want|i need|i work|i live)\b/i;
const COMMITMENT = /\b(remember|don't forget|do not forget|important|always|never|deadline|appointment|birthday|anniversary|plan|going to|will)\b/i;
const TIME_OR_NUMBER =
  /\b(\d{1,4}([:./-]\d{1,4})*|monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|yesterday|today|tonight|next week|last week|january|february|march|april|may|june|july|august|september|october|november|december)\b/i;
const SMALL_TALK = new Set([
  'ok',
  'okay',
  'k',
  'thanks',
  'thank',
  'you',
  'thx',
  'lol',
  'haha',
  'yes',
  'no',
  'sure',
  'cool',
  'nice',
  'hi',
  'hello',
  'hey',
  'bye',
  'good',
  'night',
  'gn',
  'great',
  'yeah',
  'yep',
  'nope',
]);

/** A short message made only of acknowledgements and greetings ("ok thanks!", "hi"). */
function isSmallTalk(text: string): boolean {
  const words = text.toLowerCase().match(/\p{L}+/gu) ?? [];
  return words.length > 0 && words.length <= 4 && words.every((word) => SMALL_TALK.has(word));
}

/** 0-1 estimate of how much an episode is worth remembering. */
export function estimateImportance(content: string, role: 'user' | 'agent' | 'system'): number {
  const text = content.trim();
  if (isSmallTalk(text)) return 0.05;
  let score = 0.3;
  if (SELF_DISCLOSURE.test(text)) score += 0.2;
  if (COMMITMENT.test(text)) score += 0.15;
  if (TIME_OR_NUMBER.test(text)) score += 0.1;
  // Capitalized words after the first one suggest names of people, places, projects.
  const names = text
    .split(/\s+/)
    .slice(1)
    .filter((word) => /^\p{Lu}\p{Ll}+/u.test(word)).length;
  if (names > 0) score += Math.min(0.1, names * 0.03);
  if (text.length > 200) score += 0.05;
  if (role === 'agent') score *= 0.6;
  if (role === 'system') score *= 0.5;
  return Math.round(Math.min(0.95, Math.max(0.05, score)) * 100) / 100;
}
