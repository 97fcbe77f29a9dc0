/**
 * The scopes as the memory domain hands them to callers above it: a scope is one person or one
 * group chat, the namespace every memory, episode and conversation belongs to. Callers name the
 * scope by its key (`telegram:private:42`); the directory creates it on first use.
 */
export type { Scope } from '../../storage/prisma';
export type { ScopeDescriptor, ScopeRepository as ScopeDirectory } from '../../storage/scope-repository';
