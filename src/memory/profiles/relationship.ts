/**
 * How close the owner is to a person they talk about, from the entity's favorability (0-1), with
 * Dunbar-style thresholds: a stranger below 0.25, an acquaintance below 0.5, a friend below
 * 0.75, an ally above. The soul shows it; the dreaming phase moves favorability.
 *
 * Family is not a degree of favorability: a husband met in the conversations a week ago starts
 * at the favorability every new entity has (0.3, "acquaintance"), and calling him that is wrong
 * however the feelings move. So a person the owner's words tie to them by a family word (the
 * model's `relation`, an alias such as "my husband", an observation such as "the user's wife") is
 * "family" whatever the favorability ({@link relationshipOf}).
 */
export type RelationshipState = 'stranger' | 'acquaintance' | 'friend' | 'ally' | 'family';

export function relationshipState(favorability: number): RelationshipState {
  if (favorability < 0.25) return 'stranger';
  if (favorability < 0.5) return 'acquaintance';
  if (favorability < 0.75) return 'friend';
  return 'ally';
}

/** Words that make someone family (singular; a trailing "s" is allowed), spouses and partners included. */
export const FAMILY_WORDS: readonly string[] = [
  'husband',
  'wife',
  'spouse',
  'partner',
  'fiance',
  'fiancee',
  'boyfriend',
  'girlfriend',
  'mother',
  'mom',
  'mum',
  'father',
  'dad',
  'parent',
  'son',
  'daughter',
  'child',
  'kid',
  'sister',
  'brother',
  'sibling',
  'twin',
  'grandmother',
  'grandma',
  'granny',
  'grandfather',
  'grandpa',
  'grandparent',
  'grandson',
  'granddaughter',
  'grandchild',
  'aunt',
  'uncle',
  'cousin',
  'niece',
  'nephew',
  'stepmother',
  'stepfather',
  'stepson',
  'stepdaughter',
  'stepsister',
  'stepbrother',
  'mother-in-law',
  'father-in-law',
  'sister-in-law',
  'brother-in-law',
  'son-in-law',
  'daughter-in-law',
];

/** Words that, right before a family word, make it someone else's relation or not a relative at all. */
const NOT_THE_OWNERS = /\b(business|sparring|tennis|dance|training|lab|project|his|her|their)\s+$/;

/** "fiancée" as "fiancee": accents do not change the word. */
function plain(text: string): string {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

const FAMILY = new RegExp(`\\b(${[...FAMILY_WORDS].sort((a, b) => b.length - a.length).join('|')})s?\\b`, 'g');

/** Before a family word in an observation: the owner's ("the user's husband", "my older sister"). */
const OWNERS = /\b(my|user's|user’s|owner's|owner’s|our)\s+(?:\w+\s+)?$/;

function names(text: string, before: (prefix: string) => boolean): boolean {
  const plainText = plain(text);
  for (const match of plainText.matchAll(FAMILY)) if (before(plainText.slice(0, match.index))) return true;
  return false;
}

/**
 * Whether the person is the owner's family. `relations` are words the person is known by to the
 * owner (the model's `relation`, aliases such as "my husband"): any family word there counts,
 * unless it is someone else's ("her brother") or not a relative ("business partner").
 * `observations` are sentences about the person, which name other people's relatives too ("went
 * to school with Ana's brother"): there it counts only as the owner's ("the user's wife").
 */
export function isFamily(relations: readonly string[], observations: readonly string[] = []): boolean {
  return (
    relations.some((r) => names(r, (prefix) => !NOT_THE_OWNERS.test(prefix))) ||
    observations.some((o) => names(o, (prefix) => OWNERS.test(prefix) && !NOT_THE_OWNERS.test(prefix)))
  );
}

/** The relationship the soul shows: family when the person is the owner's, else the favorability's degree. */
export function relationshipOf(favorability: number, relations: readonly string[], observations: readonly string[] = []): RelationshipState {
  return isFamily(relations, observations) ? 'family' : relationshipState(favorability);
}
