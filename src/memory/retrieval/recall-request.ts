/**
 * Whether a person's message asks the agent to remember something ("do you remember…"): the one
 * explicit request that opens deep recall, where a reply's context also searches the memories that
 * have faded. Faded memories stay out of every other reply; fading means they lost their claim on
 * the prompt, and only the person asking for them gives it back.
 *
 * Phrases, not a model: the check runs before every reply and must cost nothing. A phrase is
 * matched as whole words, case- and accent-insensitively, so "remembered" in a statement ("I
 * remembered the keys") does not count, but "Remember when we…" and "did I ever tell you…" do.
 */

/** The phrases that ask to remember, in the languages people most often write to the service in. */
const RECALL_PHRASES: readonly string[] = [
  // English
  'do you remember',
  'dont you remember',
  'do you still remember',
  'remember when',
  'remember that time',
  'remember the time',
  'do you recall',
  'can you recall',
  'did i ever tell you',
  'did i tell you',
  'have i told you',
  'have i ever told you',
  // Spanish
  'te acuerdas',
  'recuerdas cuando',
  'recuerdas que',
  'te conte',
  // Portuguese
  'voce se lembra',
  'te lembras',
  'lembras te',
  // French
  'tu te souviens',
  'vous vous souvenez',
  'te souviens tu',
  'vous souvenez vous',
  // German
  'erinnerst du dich',
  'weisst du noch',
  // Italian
  'ti ricordi',
];

/** Lower case, accents and punctuation gone, single spaces: "¿Te acuerdas?" -> "te acuerdas". */
function normalized(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/['’]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

const PATTERN = new RegExp(`(?:^| )(?:${RECALL_PHRASES.map(normalized).join('|')})(?: |$)`);

/** Whether `message` asks the agent to remember something (see the module's note). */
export function asksToRecall(message: string): boolean {
  return PATTERN.test(normalized(message));
}
