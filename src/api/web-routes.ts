/**
 * The memory page's data routes (docs/channels.md, "The memory page"): `/app/login` (a single-use
 * browser link) and `/app/api/*`. They are served by the admin API's listener but not behind
 * ADMIN_TOKEN: every `/app/api/*` request proves who it is for itself, with Telegram Mini App init
 * data (checked on every request) or the session cookie a link opened, and sees that one scope
 * (memory/web/web-access.ts). A change made with a cookie must carry the session's CSRF token.
 *
 * Another scope's memory id answers 404 like a memory that does not exist; every stored text in
 * an answer comes from the domain's read services, through the output filter. Link tokens and
 * cookie values are never logged (the server logs nothing of a request but its failures).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isRefusal, type WebAccess, type WebViewer } from '../memory/web/web-access';
import type { PageMemories } from '../memory/web/page-memories';
import type { WebSessions } from '../memory/web/web-sessions';
import { CHANGING_METHODS, createLoginLimiter, csrfMatches, refuse, sessionCookie, sessionCookieOf } from './web-auth';
import { integerIn, jsonSchema } from './schemas';
import type { ScopeArchive } from '../export/scope-archive';
import { serializeScopeExport } from '../export/scope-document';
import type { ProfileReader } from '../memory/profiles/profile-reader';
import type { MemoryCorrections } from '../memory/memories/memory-corrections';
import type { PageForget } from '../memory/web/page-forget';
import type { PageGraph } from '../memory/web/page-graph';
import { MAX_TIMELINE_DAYS, type PageTimeline } from '../memory/web/page-timeline';

/** What the page's routes use. */
export interface WebRouteServices {
  readonly access: WebAccess;
  readonly sessions: Pick<WebSessions, 'redeem' | 'end'>;
  readonly memories: PageMemories;
  readonly timeline: PageTimeline;
  readonly graph: PageGraph;
  readonly forget: PageForget;
  /** The soul as the agent sees it (`/app/api/soul`). */
  readonly profiles: Pick<ProfileReader, 'soul' | 'profile'>;
  /** The JSON export (`/app/api/export`). */
  readonly archive: Pick<ScopeArchive, 'export'>;
  /** Correcting and pinning (the person's own say, audited as theirs). */
  readonly corrections: Pick<MemoryCorrections, 'correct' | 'pin'>;
  /** PUBLIC_URL is https: the cookie is Secure whatever the request came over (a TLS proxy in front). */
  readonly https: boolean;
  readonly clock?: () => Date;
}

const loginQuery = z.object({ t: z.string().max(200).default('') });
const listQuery = z.object({
  q: z.string().max(500).optional(),
  category: z.string().min(1).max(40).optional(),
  all: z.enum(['0', '1', 'true', 'false']).optional(),
});
const memoryIdParams = z.object({ id: z.string().min(1).max(100) });
const timelineQuery = z.object({ days: integerIn(1, MAX_TIMELINE_DAYS).default(60) });
const forgetBody = z.object({ confirm: z.boolean().default(false) }).strict();
/** Longer than any memory the writer keeps; the writer's own limit says how long one may be. */
const correctBody = z.object({ content: z.string().min(1).max(20_000) }).strict();
const pinBody = z.object({ pinned: z.boolean() }).strict();
/** How the audit trail names this door. */
const DOOR = { by: 'person', door: 'the memory page' } as const;

/** The short page a used, expired or wrong link answers. */
const LINK_REFUSED_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Link not valid</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem">
<h1>This link does not work any more</h1>
<p>A memory page link works once, within 10 minutes. Ask the bot for a new one: send <code>/web</code> in your chat.</p>
</body></html>
`;

/**
 * User agents of link-preview fetchers (Telegram's, Slack's, ...): they open a link a person was
 * sent before the person does, and must not use up its single opening.
 */
const PREVIEW_AGENTS = /TelegramBot|Slackbot|facebookexternalhit|WhatsApp|Discordbot|Twitterbot|LinkedInBot|SkypeUriPreview/i;

/** What a preview fetcher gets: the link stays unused. */
const PREVIEW_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Nocturne memory page</title></head>
<body><p>Open this link in your browser to see your memory page.</p></body></html>
`;

const viewers = new WeakMap<FastifyRequest, WebViewer>();

/** The viewer the auth hook found for this request (every `/app/api/*` handler runs after it). */
export function viewerOf(request: FastifyRequest): WebViewer {
  const viewer = viewers.get(request);
  if (!viewer) throw new Error('a memory page route ran without its viewer');
  return viewer;
}

/** The reach of a viewer: the scope, narrowed to the member in a group when they are not its administrator. */
const reachOf = (viewer: WebViewer) => ({ scopeId: viewer.scope.id, ...(viewer.speakerId !== undefined && { speakerId: viewer.speakerId }) });

export function registerWebRoutes(app: FastifyInstance, services: WebRouteServices): void {
  const now = services.clock ?? (() => new Date());
  const limiter = createLoginLimiter(() => now().getTime());
  const secure = (request: FastifyRequest) => services.https || request.protocol === 'https';

  app.get('/app/login', { schema: { hide: true, querystring: jsonSchema(loginQuery) } }, async (request, reply) => {
    const { t } = loginQuery.parse(request.query);
    if (PREVIEW_AGENTS.test(request.headers['user-agent'] ?? ''))
      return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(PREVIEW_PAGE);
    const wait = limiter.waitSeconds(request.ip);
    if (wait > 0)
      return reply
        .code(429)
        .header('retry-after', String(wait))
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send('Too many wrong links; try again later.');
    const opened = await services.sessions.redeem(t, now());
    // The link's token must not travel on from here (Referer) or stay in a cache.
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    if (!opened) {
      limiter.failed(request.ip);
      return reply.code(401).type('text/html; charset=utf-8').send(LINK_REFUSED_PAGE);
    }
    return reply
      .code(303)
      .header('set-cookie', sessionCookie(opened.cookie, { secure: secure(request) }))
      .header('location', '/app')
      .send();
  });

  app.register(async (api) => {
    api.addHook('onRequest', async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const initData = request.headers['x-telegram-init-data'];
      const cookie = sessionCookieOf(request.headers.cookie);
      let found: Awaited<ReturnType<WebAccess['fromSession']>>;
      if (typeof initData === 'string' && initData !== '') found = await services.access.fromInitData(initData, now());
      else if (cookie) found = await services.access.fromSession(cookie, now());
      else return refuse(reply, 401, 'Open the page from the bot (/memory) or ask it for a link (/web).', 'web.unauthorized');
      if (isRefusal(found))
        return found.refused === 'forbidden' ? refuse(reply, 403, found.reason, 'web.forbidden') : refuse(reply, 401, found.reason, 'web.unauthorized');
      // A browser session proves every change with its CSRF token; Telegram's signed data, sent in a
      // header no other site can make a browser send, proves itself.
      if (found.csrf !== null && CHANGING_METHODS.has(request.method) && !csrfMatches(request, found.csrf))
        return refuse(reply, 403, 'Missing or wrong X-CSRF-Token: reload the page.', 'web.csrf');
      viewers.set(request, found);
    });

    api.get('/app/api/me', { schema: { hide: true } }, async (request) => {
      const viewer = viewerOf(request);
      return {
        scope: { title: viewer.scope.title ?? viewer.scope.key, kind: viewer.kind },
        person: { name: viewer.personName },
        csrf: viewer.csrf,
        via: viewer.via,
      };
    });

    api.post('/app/api/logout', { schema: { hide: true } }, async (request, reply) => {
      const cookie = sessionCookieOf(request.headers.cookie);
      const ended = viewerOf(request).via === 'browser' && cookie ? await services.sessions.end(cookie, now()) : false;
      return reply.header('set-cookie', sessionCookie('', { secure: secure(request), clear: true })).send({ ended });
    });

    api.get('/app/api/memories', { schema: { hide: true, querystring: jsonSchema(listQuery) } }, async (request) => {
      const q = listQuery.parse(request.query);
      const all = q.all === '1' || q.all === 'true';
      return { memories: await services.memories.list(reachOf(viewerOf(request)), { q: q.q, category: q.category, all }) };
    });

    api.get('/app/api/memories/:id', { schema: { hide: true, params: jsonSchema(memoryIdParams) } }, async (request, reply) => {
      const { id } = memoryIdParams.parse(request.params);
      const memory = await services.memories.detail(reachOf(viewerOf(request)), id);
      return memory ?? notFound(reply);
    });

    api.post(
      '/app/api/memories/:id/forget',
      { schema: { hide: true, params: jsonSchema(memoryIdParams), body: jsonSchema(forgetBody) } },
      async (request, reply) => {
        const { id } = memoryIdParams.parse(request.params);
        const { confirm } = forgetBody.parse(request.body ?? {});
        const viewer = viewerOf(request);
        // Within the viewer's reach only: another member's memory in a group is not theirs to forget.
        if (!(await services.memories.detail(reachOf(viewer), id))) return notFound(reply);
        if (!confirm) return { preview: await services.forget.preview(viewer.scope.id, id) };
        return { forgotten: await services.forget.confirm(viewer.scope.id, id) };
      },
    );

    api.post(
      '/app/api/memories/:id/correct',
      { schema: { hide: true, params: jsonSchema(memoryIdParams), body: jsonSchema(correctBody) } },
      async (request, reply) => {
        const { id } = memoryIdParams.parse(request.params);
        const { content } = correctBody.parse(request.body);
        const reach = reachOf(viewerOf(request));
        if (!(await services.memories.detail(reach, id))) return notFound(reply);
        const corrected = await services.corrections.correct(reach.scopeId, id, content, DOOR);
        return { memory: await services.memories.detail(reach, corrected.id) };
      },
    );

    api.post('/app/api/memories/:id/pin', { schema: { hide: true, params: jsonSchema(memoryIdParams), body: jsonSchema(pinBody) } }, async (request, reply) => {
      const { id } = memoryIdParams.parse(request.params);
      const { pinned } = pinBody.parse(request.body);
      const reach = reachOf(viewerOf(request));
      if (!(await services.memories.detail(reach, id))) return notFound(reply);
      await services.corrections.pin(reach.scopeId, id, pinned, DOOR);
      return { memory: await services.memories.detail(reach, id) };
    });

    api.get('/app/api/timeline', { schema: { hide: true, querystring: jsonSchema(timelineQuery) } }, async (request) => {
      const { days } = timelineQuery.parse(request.query);
      return { nights: await services.timeline.nights(reachOf(viewerOf(request)), days, now()) };
    });

    api.get('/app/api/graph', { schema: { hide: true } }, async (request) => services.graph.graph(reachOf(viewerOf(request))));

    api.get('/app/api/entities/:id', { schema: { hide: true, params: jsonSchema(memoryIdParams) } }, async (request, reply) => {
      const { id } = memoryIdParams.parse(request.params);
      return (await services.graph.entity(reachOf(viewerOf(request)), id)) ?? refuse(reply, 404, 'No such person or thing here.', 'web.not_found');
    });

    api.get('/app/api/soul', { schema: { hide: true } }, async (request, reply) => {
      const viewer = viewerOf(request);
      if (viewer.speakerId !== undefined) return wholeGroupOnly(reply);
      const [text, profile] = await Promise.all([services.profiles.soul(viewer.scope.id), services.profiles.profile(viewer.scope.id)]);
      return { text, updatedAt: profile?.updatedAt.toISOString() ?? null };
    });

    api.get('/app/api/export', { schema: { hide: true } }, async (request, reply) => {
      const viewer = viewerOf(request);
      if (viewer.speakerId !== undefined) return wholeGroupOnly(reply);
      const document = serializeScopeExport(await services.archive.export(viewer.scope.id));
      const day = now().toISOString().slice(0, 10);
      return reply.type('application/json; charset=utf-8').header('content-disposition', `attachment; filename="nocturne-export-${day}.json"`).send(document);
    });
  });
}

/** What a group member who is not its administrator gets for a view of the whole group. */
function wholeGroupOnly(reply: FastifyReply): FastifyReply {
  return refuse(reply, 403, 'Only the group’s administrators see the whole group’s memory.', 'web.forbidden');
}

/** Another scope's memory, another member's, and one that does not exist answer alike. */
function notFound(reply: FastifyReply): FastifyReply {
  return refuse(reply, 404, 'No such memory here.', 'web.not_found');
}
