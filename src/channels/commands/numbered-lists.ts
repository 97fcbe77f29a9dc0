/**
 * The numbers people answer with: `/forget 3` and `/why 3` mean item 3 of the list they saw
 * last: a `/memories` page (filtered or not, as shown), the summary of a `/sleep`, or the latest
 * digest (whichever reached them most recently). A number is resolved to its memory when it is
 * used, so it always means the item the person saw, whatever was learned or forgotten since.
 *
 * `/memories` numbers are kept in memory per scope (pages of one listing add up, so after paging
 * to 11-20 both 3 and 14 still work; a new filter starts a new listing). Digest numbers are read
 * from the digest book, so they survive a restart. A listing older than the latest digest gives way
 * to the digest. Only sent digests count: a pending one has not reached the person yet.
 */
import { digestItems } from '../../memory/digests/digest';
import type { DigestBook } from '../../memory/digests/digest-book';

/** Where a listing's numbers were shown. */
export type ListingSource = 'memories' | 'sleep';

/** One `/memories` listing (or `/sleep` summary): its filter and the memory behind every number shown so far. */
export interface MemoryListing {
  readonly source: ListingSource;
  readonly category: string | null;
  readonly shownAt: Date;
  readonly numbers: ReadonlyMap<number, string>;
}

export interface NumberedLists {
  /** Records the numbers of a page just shown; a different filter (or source) replaces the listing. */
  rememberPage(scopeId: string, category: string | null, entries: ReadonlyArray<{ n: number; memoryId: string }>, shownAt: Date, source?: ListingSource): void;
  listing(scopeId: string): MemoryListing | undefined;
}

/** In-memory listings, the least recently used scope dropped beyond `maxScopes`. */
export function createNumberedLists(options: { maxScopes?: number } = {}): NumberedLists {
  const maxScopes = options.maxScopes ?? 10_000;
  const listings = new Map<string, { source: ListingSource; category: string | null; shownAt: Date; numbers: Map<number, string> }>();
  return {
    rememberPage(scopeId, category, entries, shownAt, source = 'memories') {
      const previous = listings.get(scopeId);
      // Pages of one /memories listing add up; a /sleep summary is a list of its own.
      const same = previous && source === 'memories' && previous.source === 'memories' && previous.category === category;
      const numbers = same ? previous.numbers : new Map<number, string>();
      for (const { n, memoryId } of entries) numbers.set(n, memoryId);
      listings.delete(scopeId);
      listings.set(scopeId, { source, category, shownAt, numbers });
      if (listings.size > maxScopes) listings.delete(listings.keys().next().value!);
    },
    listing: (scopeId) => listings.get(scopeId),
  };
}

export type NumberLookup =
  | { readonly found: true; readonly memoryId: string; readonly from: ListingSource | 'digest' }
  | { readonly found: false; readonly explanation: string };

/** Where the numbers come from: the listings shown, and the latest digest sent. */
export interface NumberSources {
  readonly lists: NumberedLists;
  readonly digestBook: Pick<DigestBook, 'latestSent'>;
}

/** How the person calls the list a number came from: "the last /memories list you saw". */
export function listName(from: ListingSource | 'digest'): string {
  if (from === 'digest') return 'your latest digest';
  if (from === 'sleep') return 'the last /sleep summary you saw';
  return 'the last /memories list you saw';
}

/** The memory behind number `n` for this scope, from the most recent list the person saw. */
export async function lookupNumber(sources: NumberSources, scopeId: string, n: number): Promise<NumberLookup> {
  const listing = sources.lists.listing(scopeId);
  // Only a digest that reached the person can be what they answer to.
  const digest = await sources.digestBook.latestSent(scopeId);
  const digestAt = digest ? (digest.sentAt ?? digest.createdAt) : undefined;
  const useListing = listing && (!digestAt || listing.shownAt.getTime() >= digestAt.getTime());
  if (useListing) {
    const memoryId = listing.numbers.get(n);
    if (memoryId) return { found: true, memoryId, from: listing.source };
    const shown = [...listing.numbers.keys()].sort((a, b) => a - b);
    const range = shown.length > 0 ? ` (it showed ${shown[0]}–${shown[shown.length - 1]})` : '';
    return { found: false, explanation: `There is no number ${n} in ${listName(listing.source)}${range}.` };
  }
  if (digest) {
    const item = digestItems(digest).find((i) => i.n === n);
    if (item) return { found: true, memoryId: item.memoryId, from: 'digest' };
    return { found: false, explanation: `Your latest digest has no item ${n}. Send /memories to see numbered memories.` };
  }
  return { found: false, explanation: 'Send /memories first: the numbers refer to the list it shows.' };
}
