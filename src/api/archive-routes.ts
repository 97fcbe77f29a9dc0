/**
 * A scope's export and import on the admin API: `GET /scopes/:id/export` (the JSON export, the
 * import format, or its Markdown files joined) and `POST /scopes/:id/import` (an export into an
 * empty scope, exactly or as a copy with new ids).
 */
import { errorCodes } from 'fastify';
import { removeImportFile, spoolToFile, SpoolTooLarge, type ImportFile } from '../export/import-file';
import { joinMarkdownFiles, renderMarkdownExport } from '../export/markdown-export';
import { serializeScopeExport } from '../export/scope-document';
import { ValidationError } from '../shared/errors';
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { errorResponses, exportResponse, importResponse } from './response-schemas';
import { exportQuery, importQuery, scopeParams } from './schemas';

/** Largest JSON export POST /scopes/:id/import takes (a scope of ~100,000 episodes). */
const IMPORT_BODY_LIMIT = 256 * 1024 * 1024;

/** The services the export and import routes use. */
export type ArchiveRouteDeps = Pick<ApiOptions, 'directory' | 'archive' | 'timeZone' | 'spoolDir'>;

export async function registerArchiveRoutes(app: ApiApp, deps: ArchiveRouteDeps): Promise<void> {
  const { directory, archive } = deps;

  app.get(
    '/scopes/:id/export',
    { schema: { params: scopeParams, querystring: exportQuery, response: { 200: exportResponse, ...errorResponses } } },
    async (request, reply) => {
      const scope = await directory.require(request.params.id);
      const doc = await archive.export(scope.id);
      if (request.query.format === 'markdown') {
        return reply.type('text/markdown; charset=utf-8').send(joinMarkdownFiles(renderMarkdownExport(doc, { defaultTimeZone: deps.timeZone })));
      }
      return reply.type('application/json; charset=utf-8').send(serializeScopeExport(doc));
    },
  );

  // The body is a JSON export. It fills the scope of the path when that scope is empty; a
  // scope that does not exist yet is created when the export is of that very scope (restoring
  // into an empty database). `mode=copy` gives every row a new id (the export's ids are taken),
  // into the empty scope of the path or, when none has that key or id, a new scope with that key.
  // The body is never held in memory: it is spooled to an encrypted temporary file as it arrives
  // (removed after the answer, or at once when the upload fails), then read on a worker thread one
  // element at a time and written a batch at a time with turns of the event loop between
  // (json-import.ts), so a big import neither stops the other requests nor grows with the
  // document.
  await app.register(async (scoped: ApiApp) => {
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser(/^application\/json\s*(;.*)?$/i, (request, payload, done) => {
      if (Number(request.headers['content-length']) > IMPORT_BODY_LIMIT) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
      spoolToFile(payload, { limit: IMPORT_BODY_LIMIT, dir: deps.spoolDir }).then(
        (file) => done(null, file),
        (error: Error) =>
          done(error instanceof SpoolTooLarge ? new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE() : Object.assign(error, { statusCode: 400 }), undefined),
      );
    });
    // Also when the handler never ran (a bad query string is refused after the body was read).
    scoped.addHook('onResponse', async (request) => {
      const body = request.body as ImportFile | undefined;
      if (body?.cipher) await removeImportFile(body);
    });
    scoped.post(
      '/scopes/:id/import',
      { schema: { params: scopeParams, querystring: importQuery, response: { 200: importResponse, 201: importResponse, ...errorResponses } } },
      async (request, reply) => {
        const { id } = request.params;
        const { mode } = request.query;
        const file = request.body as ImportFile | undefined;
        if (!file) throw new ValidationError('The body is not JSON: it is empty', { code: 'import.invalid_json' });
        try {
          const existing = await directory.find(id);
          // A copy has new ids, so it cannot be asked for by the export's id: the path names the
          // new scope by its key (the CLI's `import-scope FILE --as NEW_KEY`), created by the import.
          const target = existing ? { scopeKey: existing.key } : mode === 'copy' ? { scopeKey: id } : { requireScopeId: id };
          const result = await archive.importFile(file, { mode, ...target });
          return await reply.code(existing ? 200 : 201).send(result);
        } finally {
          await removeImportFile(file);
        }
      },
    );
  });
}
