/**
 * The scopes people and operators name: by key (`telegram:private:42`, as chats and the CLI say
 * it) or by id (as the admin API's paths say it). The directory finds them, creates one on a
 * first message, records who owns it and when a message last arrived, and lists them with their
 * counts. Every other service takes the scope's id it returns.
 */
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Prisma, PrismaClient, Scope } from '../../storage/prisma';
import { normalizeScopeKey, scopeKeyProblem } from './scope-key';
import { GROUP_REPLIES, isGroupReplies, type GroupReplies } from './group-replies';
import type { ScopeDescriptor, ScopeRepository, ScopeSummary } from '../../storage/scope-repository';

export type { ScopeDescriptor, ScopeSummary };

export interface ScopeDirectory {
  /** The scope with this key, created on first use; a key that breaks the rule of scope-key.ts is a ValidationError. */
  ensure(scope: ScopeDescriptor): Promise<Scope>;
  findByKey(key: string): Promise<Scope | null>;
  findById(id: string): Promise<Scope | null>;
  /** The scope named by a key or an id; null when neither names one. */
  find(keyOrId: string): Promise<Scope | null>;
  /** Like {@link ScopeDirectory.find}, but a scope that does not exist is a NotFoundError. */
  require(keyOrId: string): Promise<Scope>;
  list(): Promise<ScopeSummary[]>;
  /** Records who owns the scope (digests go to them); returns the row as it is now. */
  setOwner(scopeId: string, ownerId: string): Promise<Scope>;
  /** Records that a message arrived (idle detection for the sleep worker). */
  touch(scopeId: string, at: Date): Promise<void>;
  /** Sets when the agent answers in a group (`Scope.settings.groupReplies`, see group-replies.ts); returns the row as it is now. */
  setGroupReplies(scopeId: string, mode: GroupReplies): Promise<Scope>;
}

export function createScopeDirectory(prisma: PrismaClient, repository: ScopeRepository): ScopeDirectory {
  const findById = (id: string) => prisma.scope.findUnique({ where: { id } });
  // A key is stored NFC-normalized (scope-key.ts); a lookup tries it as given first, for a key
  // stored before keys were normalized.
  async function findByKey(key: string): Promise<Scope | null> {
    const found = await repository.findByKey(key);
    if (found || !key.isWellFormed()) return found;
    const nfc = key.normalize('NFC');
    return nfc === key ? null : repository.findByKey(nfc);
  }
  async function find(keyOrId: string): Promise<Scope | null> {
    return (await findByKey(keyOrId)) ?? (await findById(keyOrId));
  }
  return {
    async ensure(scope) {
      const problem = scopeKeyProblem(scope.key);
      // A scope stored before the key rule existed keeps working under the key it has; a new
      // scope is created only under a key that passes the rule, in its normalized form.
      if (problem !== null || scope.key.normalize('NFC') !== scope.key) {
        const stored = await repository.findByKey(scope.key);
        if (stored) return stored;
      }
      return repository.ensure({ ...scope, key: normalizeScopeKey(scope.key) });
    },
    findByKey,
    findById,
    find,
    async require(keyOrId) {
      const scope = await find(keyOrId);
      if (!scope) throw new NotFoundError(`no scope ${keyOrId}`, { code: 'scope.not_found' });
      return scope;
    },
    list: () => repository.list(),
    setOwner: (scopeId, ownerId) => prisma.scope.update({ where: { id: scopeId }, data: { ownerId } }),
    touch: (scopeId, at) => repository.touch(scopeId, at),
    async setGroupReplies(scopeId, mode) {
      if (!isGroupReplies(mode))
        throw new ValidationError(`group replies are ${GROUP_REPLIES.join(' or ')}, not "${String(mode)}"`, { code: 'scope.group_replies_invalid' });
      return prisma.$transaction(async (tx) => {
        const row = await tx.scope.findUnique({ where: { id: scopeId }, select: { settings: true } });
        if (!row) throw new NotFoundError(`no scope ${scopeId}`, { code: 'scope.not_found' });
        const current = row.settings && typeof row.settings === 'object' && !Array.isArray(row.settings) ? (row.settings as Record<string, unknown>) : {};
        return tx.scope.update({ where: { id: scopeId }, data: { settings: { ...current, groupReplies: mode } as Prisma.InputJsonObject } });
      });
    },
  };
}
