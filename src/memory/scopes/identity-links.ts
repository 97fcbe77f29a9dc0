/**
 * One person, one memory, on every channel: which scope an identity's messages go to, decided
 * here and nowhere else. An identity is what a channel knows of who is talking, named by the
 * scope key the channel gives it (`telegram:private:42`, `terminal:alice`, `webhook:crm:alice`).
 *
 * - The owner of a personal deployment is named in the configuration on each channel
 *   (OWNER_TELEGRAM_USER_ID, OWNER_TERMINAL_USER, OWNER_WEBHOOK_SENDER): every one of those
 *   identities speaks into the scope of the first one named, from the first message on.
 * - Anyone else joins two identities with a one-time code (link-codes.ts) or the operator does
 *   (`cli link join`, the admin API): the joining identity's own scope is merged into the other
 *   (scope-merge.ts) and its messages go there from then on. `unlink` stops that; what was merged
 *   stays merged (the person is told so when linking).
 *
 * A group is never an identity of one person: it cannot link, and is never resolved through a
 * link. The resolution is what the channels and the agent get as their directory's `ensure`
 * ({@link createPersonDirectory}), so no channel decides it for itself.
 */
import type { OwnerConfig } from '../../config/load-config';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { PrismaClient, Scope } from '../../storage/prisma';
import type { ChangeOrigin } from '../memories/memory-writer';
import type { ScopeDescriptor, ScopeDirectory } from './scope-directory';
import { mergeScopeRows, type MergeCounts } from './scope-merge';

/** Link states: the merge is under way (messages already go to the target), done, or ended by `unlink`. */
export type LinkState = 'merging' | 'linked' | 'unlinked';
const ACTIVE: LinkState[] = ['merging', 'linked'];

/** A merge of a large scope takes a while on a small machine; it is one transaction all the same. */
const MERGE_TRANSACTION = { timeout: 30 * 60_000, maxWait: 60_000 } as const;

/** The kinds of scope that are one person (a group is many). */
const PERSONAL_KINDS = new Set(['private', 'user', 'source', 'app']);

/** An identity's link as listed (CLI, admin API). */
export interface IdentityLinkView {
  readonly identityKey: string;
  readonly scopeId: string;
  readonly scopeKey: string | null;
  readonly state: LinkState;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** What joining two identities did. */
export interface JoinResult {
  /** The scope both identities speak into now. */
  readonly scope: Scope;
  /** What was moved into it (nothing when the identity had no scope of its own yet). */
  readonly merge: MergeCounts | null;
}

export interface IdentityScopes {
  /** The scope an identity's messages go to now (created on first use), by the rules above. */
  resolve(identity: ScopeDescriptor): Promise<Scope>;
  /**
   * The scope another identity's messages go to (a link's, or the owner's scope for the owner's
   * other identities), or null when it speaks into its own (or the owner's scope does not exist yet).
   */
  linkedScopeId(identityKey: string): Promise<string | null>;
  /**
   * Joins `identityKey` to the scope `into` (an identity key, a scope key or a scope id): its own
   * scope is merged into that one. Re-running it after a crash completes the merge.
   */
  join(identityKey: string, into: string, origin: ChangeOrigin): Promise<JoinResult>;
  /** Stops the identity's new messages from going to the joined scope; returns whether it was linked. */
  unlink(identityKey: string, origin: ChangeOrigin): Promise<boolean>;
  list(): Promise<IdentityLinkView[]>;
  /** Completes every merge a crash interrupted (service start, `cli link resume`); returns how many. */
  resumeMerges(origin: ChangeOrigin): Promise<number>;
  /** Why this identity cannot link (a group, the configured owner), or null when it can. */
  linkProblem(identity: Pick<ScopeDescriptor, 'key' | 'kind'>): string | null;
}

/** The owner's identities from the configuration, and the scope they all speak into. */
export interface OwnerIdentities {
  readonly scope: ScopeDescriptor;
  readonly keys: ReadonlySet<string>;
}

/** The audit event of an identity's link reaching `state` (linked after a merge, or unlinked). */
function linkStateAudit(scopeId: string, identityKey: string, state: 'linked' | 'unlinked', origin: ChangeOrigin) {
  return {
    scopeId,
    action: state === 'linked' ? 'link' : 'unlink',
    subjectType: 'identity',
    subjectId: identityKey,
    after: { state },
    reason: origin.reason ?? null,
    createdAt: origin.now,
  };
}

/**
 * The owner's identity keys, as each channel names them (telegram-scope.ts, terminal-channel.ts,
 * webhook-request.ts), and the scope of the first one configured: Telegram, else the terminal,
 * else the webhook. The Telegram private chat comes first because digests are delivered to the
 * owner of the scope, and Telegram is the channel that can deliver one unasked.
 */
export function ownerIdentities(owner: OwnerConfig): OwnerIdentities | null {
  const named: ScopeDescriptor[] = [];
  if (owner.telegramUserId)
    named.push({ key: `telegram:private:${owner.telegramUserId}`, channel: 'telegram', kind: 'private', ownerId: owner.telegramUserId });
  if (owner.terminalUser) named.push({ key: `terminal:${owner.terminalUser}`, channel: 'terminal', kind: 'user', ownerId: owner.terminalUser });
  if (owner.webhookSender) named.push({ key: `webhook:${owner.webhookSender}`, channel: 'webhook', kind: 'source' });
  if (named.length === 0) return null;
  return { scope: named[0]!, keys: new Set(named.map((n) => n.key)) };
}

export function createIdentityScopes(deps: {
  prisma: PrismaClient;
  directory: ScopeDirectory;
  owner: OwnerConfig;
  /** Test hook (LINK_MERGE_PAUSE_MS): a wait inside the merge's transaction. */
  mergePauseMs?: number;
}): IdentityScopes {
  const { prisma, directory } = deps;
  const owner = ownerIdentities(deps.owner);
  const pause = deps.mergePauseMs ? () => new Promise<void>((resolve) => setTimeout(resolve, deps.mergePauseMs)) : undefined;

  async function linkedScopeId(identityKey: string): Promise<string | null> {
    const link = await prisma.identityLink.findUnique({ where: { identityKey } });
    return link && ACTIVE.includes(link.state as LinkState) ? link.scopeId : null;
  }

  /** The scope another identity's messages go to (a link, else the owner's scope), or null for its own. */
  async function routedScopeId(identityKey: string): Promise<string | null> {
    const linked = await linkedScopeId(identityKey);
    if (linked) return linked;
    if (!owner?.keys.has(identityKey) || identityKey === owner.scope.key) return null;
    return (await directory.findByKey(owner.scope.key))?.id ?? null;
  }

  function linkProblem(identity: Pick<ScopeDescriptor, 'key' | 'kind'>): string | null {
    if (identity.kind !== undefined && !PERSONAL_KINDS.has(identity.kind)) return 'a group chat cannot be linked: linking joins one person’s own chats';
    if (owner?.keys.has(identity.key)) return 'this is the owner’s identity (set in the configuration): it already shares the owner’s memory';
    return null;
  }

  /** Moves the identity's own scope into its link's target and marks the link done, in one transaction. */
  async function completeMerge(identityKey: string, origin: ChangeOrigin): Promise<MergeCounts | null> {
    return prisma.$transaction(async (tx) => {
      const link = await tx.identityLink.findUnique({ where: { identityKey } });
      if (link?.state !== 'merging') return null;
      const counts = link.fromScopeId && link.fromScopeId !== link.scopeId ? await mergeScopeRows(tx, link.fromScopeId, link.scopeId, origin, pause) : null;
      await tx.identityLink.update({ where: { identityKey }, data: { state: 'linked' } });
      await tx.auditEvent.create({ data: linkStateAudit(link.scopeId, identityKey, 'linked', origin) });
      return counts;
    }, MERGE_TRANSACTION);
  }

  return {
    async resolve(identity) {
      if (identity.kind !== undefined && !PERSONAL_KINDS.has(identity.kind)) return directory.ensure(identity);
      const linked = await linkedScopeId(identity.key);
      if (linked) {
        const row = await directory.findById(linked);
        if (row) return row;
      }
      if (owner?.keys.has(identity.key)) return directory.ensure({ ...owner.scope, title: identity.title });
      return directory.ensure(identity);
    },
    linkedScopeId: routedScopeId,
    linkProblem,
    async join(identityKey, into, origin) {
      const problem = linkProblem({ key: identityKey });
      if (problem) throw new ValidationError(problem, { code: 'link.not_allowed' });
      const existing = await prisma.identityLink.findUnique({ where: { identityKey } });
      // Where `into` speaks: an identity that is itself linked names its link's target.
      const intoLinked = await linkedScopeId(into);
      const target = intoLinked ? await directory.findById(intoLinked) : await directory.find(owner?.keys.has(into) ? owner.scope.key : into);
      if (!target) throw new NotFoundError(`no scope or identity ${JSON.stringify(into.slice(0, 80))}`, { code: 'link.target_not_found' });
      if (target.kind === 'group')
        throw new ValidationError('a group chat cannot be linked: linking joins one person’s own chats', { code: 'link.not_allowed' });
      if (existing && ACTIVE.includes(existing.state as LinkState) && existing.scopeId !== target.id)
        throw new ValidationError('this identity is already linked to another memory; /unlink it first', { code: 'link.already_linked' });
      const own = await directory.findByKey(identityKey);
      if (own && own.id === target.id) {
        if (existing?.state !== 'merging') throw new ValidationError('these two are already one memory', { code: 'link.same_scope' });
      }
      if (!existing || existing.state === 'unlinked') {
        await prisma.identityLink.upsert({
          where: { identityKey },
          create: { identityKey, scopeId: target.id, fromScopeId: own?.id ?? null, state: 'merging' },
          update: { scopeId: target.id, fromScopeId: own?.id ?? null, state: 'merging' },
        });
      }
      const merge = await completeMerge(identityKey, origin);
      return { scope: (await directory.findById(target.id)) ?? target, merge };
    },
    async unlink(identityKey, origin) {
      const link = await prisma.identityLink.findUnique({ where: { identityKey } });
      if (!link || !ACTIVE.includes(link.state as LinkState)) return false;
      await prisma.$transaction([
        prisma.identityLink.update({ where: { identityKey }, data: { state: 'unlinked' } }),
        prisma.auditEvent.create({ data: linkStateAudit(link.scopeId, identityKey, 'unlinked', origin) }),
      ]);
      return true;
    },
    async list() {
      const links = await prisma.identityLink.findMany({ orderBy: { createdAt: 'asc' } });
      const scopes = await prisma.scope.findMany({ where: { id: { in: links.map((l) => l.scopeId) } }, select: { id: true, key: true } });
      const keys = new Map(scopes.map((s) => [s.id, s.key]));
      return links.map((l) => ({
        identityKey: l.identityKey,
        scopeId: l.scopeId,
        scopeKey: keys.get(l.scopeId) ?? null,
        state: l.state as LinkState,
        createdAt: l.createdAt,
        updatedAt: l.updatedAt,
      }));
    },
    async resumeMerges(origin) {
      const pending = await prisma.identityLink.findMany({ where: { state: 'merging' }, select: { identityKey: true } });
      for (const link of pending) await completeMerge(link.identityKey, { ...origin, reason: origin.reason ?? 'a merge interrupted before, completed' });
      return pending.length;
    },
  };
}

/**
 * The scope directory the doors people talk through use (channels, the agent, `cli chat`): the
 * same directory, but a message's scope is the one its identity resolves to.
 */
export type PersonDirectory = ScopeDirectory & Pick<IdentityScopes, 'linkedScopeId'>;

export function createPersonDirectory(directory: ScopeDirectory, identities: IdentityScopes): PersonDirectory {
  return { ...directory, ensure: (identity) => identities.resolve(identity), linkedScopeId: (key) => identities.linkedScopeId(key) };
}
