/**
 * What each door of the service is given from the core, by name: the agent loop, the chat
 * channels' commands, Telegram's media readers, the MCP door and the admin API. A door's
 * signature says what it touches; the service (service.ts), the CLI's chat and mcp commands and
 * the tests wire the doors with these.
 */
import { createImageDescriber } from './agent/image-describer';
import type { AgentServices } from './agent/agent';
import type { TelegramMediaOptions } from './channels/telegram/media/media-options';
import type { Config } from './config/load-config';
import type { Core } from './core';
import { createTranscriber } from './llm/transcriber';
import { createForgetPreviewBook } from './mcp/forget-previews';
import type { McpDoorServices } from './mcp/memory-server';
import type { Logger } from './shared/logger';

/** The MCP door's services from the core (the same ones the admin API's /mcp is given). */
export function mcpServices(core: Core): McpDoorServices {
  return {
    search: core.search,
    catalog: core.catalog,
    episodes: core.episodeService,
    forget: core.forget,
    profiles: core.profiles,
    digestBook: core.digestBook,
    forgetPreviews: createForgetPreviewBook(),
    logger: core.logger,
  };
}

/** The services the agent loop uses, by name, taken from the core. */
export function agentServices(core: Core): AgentServices {
  return {
    config: core.config,
    llm: core.llm,
    logger: core.logger,
    scopes: core.personDirectory,
    episodes: core.episodeService,
    memories: core.memoryStore,
    conversations: core.conversations,
    context: core.context,
    search: core.search,
    soul: core.soul,
    reminders: core.reminders,
  };
}

/** The domain services a chat channel's commands use (/memories, /why, /forget, /digest, /export, /sleep). */
export function channelServices(core: Core) {
  const { catalog, digestBook, forget, archive, scheduler, digestSchedule, scopeControls, conflicts, reminders, corrections } = core;
  const link = { codes: core.linkCodes, identities: core.identities };
  return {
    directory: core.personDirectory,
    catalog,
    digestBook,
    forget,
    archive,
    scheduler,
    digestSchedule,
    scopeControls,
    conflicts,
    reminders,
    corrections,
    link,
  };
}

/**
 * What the Telegram bot reads media with: the configured model describes photos (it is the one
 * model every reply uses, so its prompt redaction and usage records apply), the transcription
 * server turns voice into words when one is configured, and documents are stored through the
 * episode service.
 */
export function mediaServices(config: Config, core: Core, logger: Logger): TelegramMediaOptions {
  const { media } = config;
  return {
    limits: { maxFileBytes: media.maxFileBytes, documentMaxPages: media.documentMaxPages, documentMaxParts: media.documentMaxParts },
    describer: createImageDescriber({ model: core.llm, vision: media.vision, maxChars: media.descriptionMaxChars, logger }),
    ...(media.transcription && { transcriber: createTranscriber(media.transcription) }),
    episodes: core.episodeService,
  };
}

/**
 * The domain services the admin API's routes use, from the core (the MCP endpoint and the
 * identity links included); the service adds its token, logger and Telegram's health.
 */
export function apiServices(core: Core) {
  return {
    mcp: { services: mcpServices(core), tokens: core.scopeTokens },
    timeZone: core.config.timeZone,
    directory: core.directory,
    catalog: core.catalog,
    episodeLog: core.episodeLog,
    auditLog: core.auditLog,
    archive: core.archive,
    forget: core.forget,
    search: core.search,
    sleep: core.sleep,
    scheduler: core.scheduler,
    givenUp: core.givenUp,
    digestSchedule: core.digestSchedule,
    scopeControls: core.scopeControls,
    storeStats: core.storeStats,
    indexGuard: core.indexGuard,
    metrics: core.metrics,
    embeddingWorker: core.embeddingWorker,
    links: { identities: core.identities, codes: core.linkCodes },
    corrections: core.corrections,
  };
}
