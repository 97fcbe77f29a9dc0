/**
 * The memory page's services as the composition root builds them (docs/channels.md, "The memory
 * page"): who may look and what they see, for the admin API's listener to serve.
 */
import type { WebRouteServices } from './api/web-routes';
import type { Config } from './config/load-config';
import type { Core } from './core';
import { createPageForget } from './memory/web/page-forget';
import { createPageGraph } from './memory/web/page-graph';
import { createPageMemories } from './memory/web/page-memories';
import { createPageTimeline } from './memory/web/page-timeline';
import { createWebAccess, type GroupMembership } from './memory/web/web-access';

/**
 * The memory page's routes (`/app/login`, `/app/api/*`): who may look (Telegram init data signed
 * with the bot's token, or a browser session) and what they see. `membership` is read at each
 * request: the Telegram bot that answers it starts after the API.
 */
export function webRouteServices(config: Config, core: Core, membership: () => GroupMembership | undefined): WebRouteServices {
  return {
    access: createWebAccess({
      identities: core.identities,
      directory: core.directory,
      sessions: core.webSessions,
      ...(config.telegram && { botToken: config.telegram.token }),
      allowedUsers: config.telegram?.allowedUsers ?? [],
      maxAgeSeconds: config.web.initDataMaxAgeSeconds,
      membership: { standing: (chatId, userId) => membership()?.standing(chatId, userId) ?? Promise.resolve('none') },
    }),
    sessions: core.webSessions,
    memories: createPageMemories({ prisma: core.db.prisma, search: core.search, catalog: core.catalog }),
    timeline: createPageTimeline({ prisma: core.db.prisma, defaultTimeZone: config.timeZone }),
    graph: createPageGraph({ prisma: core.db.prisma }),
    forget: createPageForget(core.forget),
    profiles: core.profiles,
    archive: core.archive,
    corrections: core.corrections,
    https: config.web.https,
  };
}
