/**
 * How close the owner is to a person they talk about, from the entity's favorability (0-1), with
 * Dunbar-style thresholds: a stranger below 0.25, an acquaintance below 0.5, a friend below
 * 0.75, an ally above. The soul shows it; the dreaming phase moves favorability.
 */
export type RelationshipState = 'stranger' | 'acquaintance' | 'friend' | 'ally';

export function relationshipState(favorability: number): RelationshipState {
  if (favorability < 0.25) return 'stranger';
  if (favorability < 0.5) return 'acquaintance';
  if (favorability < 0.75) return 'friend';
  return 'ally';
}
