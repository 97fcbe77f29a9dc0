/**
 * The Porter stemmer (M. F. Porter, 1980, in the revision of his own C implementation, which is
 * what SQLite's FTS5 `porter` tokenizer applies): the full-text index counts a word's occurrences
 * in a row with it (full-text.ts), so it must stem as FTS5 does. Words shorter than 3 characters
 * or longer than 64 are left as they are, as FTS5 leaves them.
 */

/** FTS5 stems words of at most this many bytes (FTS5_PORTER_MAX_TOKEN); longer ones pass through. */
const MAX_STEMMED = 64;

function isConsonant(word: string, i: number): boolean {
  const c = word[i];
  if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return false;
  if (c === 'y') return i === 0 ? true : !isConsonant(word, i - 1);
  return true;
}

/** Porter's m: the number of vowel-consonant sequences in `stem`. */
function measure(stem: string): number {
  let m = 0;
  let i = 0;
  const n = stem.length;
  while (i < n && isConsonant(stem, i)) i++;
  while (i < n) {
    while (i < n && !isConsonant(stem, i)) i++;
    if (i >= n) break;
    while (i < n && isConsonant(stem, i)) i++;
    m++;
  }
  return m;
}

function hasVowel(stem: string): boolean {
  for (let i = 0; i < stem.length; i++) if (!isConsonant(stem, i)) return true;
  return false;
}

function endsDoubleConsonant(word: string): boolean {
  const n = word.length;
  return n >= 2 && word[n - 1] === word[n - 2] && isConsonant(word, n - 1);
}

/** Consonant-vowel-consonant at the end, the last not w, x or y. */
function endsCvc(word: string): boolean {
  const n = word.length;
  if (n < 3) return false;
  if (!isConsonant(word, n - 1) || isConsonant(word, n - 2) || !isConsonant(word, n - 3)) return false;
  const last = word[n - 1];
  return last !== 'w' && last !== 'x' && last !== 'y';
}

/** Replaces the first matching suffix when its stem's measure exceeds `minMeasure`. */
function replaceSuffix(word: string, rules: ReadonlyArray<readonly [string, string]>, minMeasure: number): string {
  for (const [suffix, replacement] of rules) {
    if (word.endsWith(suffix)) {
      const stem = word.slice(0, -suffix.length);
      return measure(stem) > minMeasure ? stem + replacement : word;
    }
  }
  return word;
}

const STEP2: ReadonlyArray<readonly [string, string]> = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['izer', 'ize'],
  ['bli', 'ble'],
  ['alli', 'al'],
  ['entli', 'ent'],
  ['eli', 'e'],
  ['ousli', 'ous'],
  ['ization', 'ize'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['iveness', 'ive'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['aliti', 'al'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
  ['logi', 'log'],
];
const STEP3: ReadonlyArray<readonly [string, string]> = [
  ['icate', 'ic'],
  ['ative', ''],
  ['alize', 'al'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
];
const STEP4 = ['al', 'ance', 'ence', 'er', 'ic', 'able', 'ible', 'ant', 'ement', 'ment', 'ent', 'ion', 'ou', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize'];

function step1ab(word: string): string {
  if (word.endsWith('sses')) word = word.slice(0, -2);
  else if (word.endsWith('ies')) word = word.slice(0, -2);
  else if (!word.endsWith('ss') && word.endsWith('s')) word = word.slice(0, -1);

  if (word.endsWith('eed')) return measure(word.slice(0, -3)) > 0 ? word.slice(0, -1) : word;
  let stem: string | undefined;
  if (word.endsWith('ed') && hasVowel(word.slice(0, -2))) stem = word.slice(0, -2);
  else if (word.endsWith('ing') && hasVowel(word.slice(0, -3))) stem = word.slice(0, -3);
  if (stem === undefined) return word;
  if (stem.endsWith('at') || stem.endsWith('bl') || stem.endsWith('iz')) return `${stem}e`;
  if (endsDoubleConsonant(stem) && !/[lsz]$/.test(stem)) return stem.slice(0, -1);
  if (measure(stem) === 1 && endsCvc(stem)) return `${stem}e`;
  return stem;
}

function step4(word: string): string {
  // The longest matching suffix decides (Porter's C code switches on the penultimate letter, which
  // amounts to this for the list above).
  const suffix = STEP4.filter((s) => word.endsWith(s)).sort((a, b) => b.length - a.length)[0];
  if (!suffix) return word;
  const stem = word.slice(0, -suffix.length);
  if (measure(stem) <= 1) return word;
  if (suffix === 'ion' && !/[st]$/.test(stem)) return word;
  return stem;
}

function step5(word: string): string {
  if (word.endsWith('e')) {
    const stem = word.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem))) word = stem;
  }
  if (word.endsWith('ll') && measure(word) > 1) word = word.slice(0, -1);
  return word;
}

/** The stem of a lower-case word. */
export function porterStem(word: string): string {
  if (word.length < 3 || word.length > MAX_STEMMED) return word;
  let w = step1ab(word);
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) w = `${w.slice(0, -1)}i`;
  w = replaceSuffix(w, STEP2, 0);
  w = replaceSuffix(w, STEP3, 0);
  w = step4(w);
  return step5(w);
}
