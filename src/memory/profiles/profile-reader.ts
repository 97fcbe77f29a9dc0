/**
 * The agent's profile of a scope's owner ("soul") as it is shown: to the person (`/soul`, the
 * CLI), to operators, and to the model in every reply's prompt. Texts pass the output filter.
 */
import type { PrismaClient, Profile } from '../../storage/prisma';
import { showStored, showStoredValue } from '../output-filter';
import { soulMarkdown } from './soul';

export interface ProfileReader {
  /** The soul as Markdown, or a short document saying nothing has been learned yet. */
  soul(scopeId: string): Promise<string>;
  /** The stored profile (soul, structured data, version); null before the first one. */
  profile(scopeId: string): Promise<Profile | null>;
}

export function createProfileReader(prisma: PrismaClient): ProfileReader {
  return {
    soul: async (scopeId) => showStored(await soulMarkdown(prisma, scopeId)),
    async profile(scopeId) {
      const row = await prisma.profile.findUnique({ where: { scopeId } });
      return row && showStoredValue(row);
    },
  };
}
