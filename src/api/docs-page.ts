/**
 * The admin API's reference as one HTML page (`GET /docs`, behind the same bearer token as the
 * API), rendered from the OpenAPI document `/openapi.json` serves: every route with its method,
 * path, parameters (where, type, range, whether required) and request body. Self-contained: no
 * script, no stylesheet or font from elsewhere, so it works offline and shows nothing it was not
 * given. Open it with the token, e.g. `curl -H "Authorization: Bearer $ADMIN_TOKEN"
 * http://127.0.0.1:8787/docs > nocturne-api.html`.
 */

interface OpenApiParameter {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
  readonly description?: string;
  readonly schema?: Record<string, unknown>;
}

interface OpenApiOperation {
  readonly summary?: string;
  readonly description?: string;
  readonly parameters?: readonly OpenApiParameter[];
  readonly requestBody?: { readonly content?: Record<string, { readonly schema?: unknown }> };
  readonly responses?: Record<string, { readonly content?: Record<string, { readonly schema?: unknown }> }>;
}

export interface OpenApiDocument {
  readonly info?: { readonly title?: string; readonly version?: string };
  /** Schemas used by more than one route, referenced as `#/components/schemas/<name>`. */
  readonly components?: { readonly schemas?: Record<string, unknown> };
  readonly paths?: Record<string, Record<string, OpenApiOperation>>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A parameter's type and range in a few words: `integer, 1-500, default 50`. */
function describeSchema(schema: Record<string, unknown> | undefined): string {
  if (!schema) return '';
  const parts: string[] = [];
  if (typeof schema.type === 'string') parts.push(schema.type);
  if (Array.isArray(schema.enum)) parts.push(`one of ${schema.enum.map(String).join(', ')}`);
  if (schema.minimum !== undefined || schema.maximum !== undefined) parts.push(`${schema.minimum ?? '…'}-${schema.maximum ?? '…'}`);
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(', ');
}

/** An operation's successful answers (2xx) with their media type and schema; the error body is the same everywhere and said once. */
function successAnswers(op: OpenApiOperation): Array<[string, string, unknown]> {
  const answers: Array<[string, string, unknown]> = [];
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (!status.startsWith('2')) continue;
    for (const [media, { schema }] of Object.entries(response.content ?? {})) if (schema) answers.push([status, media, schema]);
  }
  return answers;
}

export function renderDocsPage(doc: OpenApiDocument): string {
  const title = `${doc.info?.title ?? 'API'} ${doc.info?.version ? `v${doc.info.version}` : ''}`.trim();
  const sections: string[] = [];
  for (const [path, operations] of Object.entries(doc.paths ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    for (const method of METHODS) {
      const op = operations[method];
      if (!op) continue;
      const rows = (op.parameters ?? []).map(
        (p) =>
          `<tr><td><code>${escape(p.name)}</code></td><td>${escape(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${escape(describeSchema(p.schema))}</td><td>${escape(p.description ?? '')}</td></tr>`,
      );
      const body = op.requestBody?.content?.['application/json']?.schema;
      sections.push(
        [
          `<section><h2><span class="m">${method.toUpperCase()}</span> <code>${escape(path)}</code></h2>`,
          op.summary || op.description ? `<p>${escape(op.summary ?? op.description ?? '')}</p>` : '',
          rows.length > 0 ? `<table><tr><th>parameter</th><th>in</th><th>required</th><th>type</th><th>description</th></tr>${rows.join('')}</table>` : '',
          body ? `<p>JSON body:</p><pre>${escape(JSON.stringify(body, null, 2))}</pre>` : '',
          ...successAnswers(op).map(
            ([status, media, schema]) => `<p>Answer ${escape(status)} (${escape(media)}):</p><pre>${escape(JSON.stringify(schema, null, 2))}</pre>`,
          ),
          '</section>',
        ].join('\n'),
      );
    }
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}h2{font-size:1.1rem;margin-top:2rem}.m{display:inline-block;min-width:4.5rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}pre{background:#f4f4f4;padding:.5rem;overflow:auto}</style>
</head><body>
<h1>${escape(title)}</h1>
<p>Every route needs <code>Authorization: Bearer &lt;ADMIN_TOKEN&gt;</code> except <code>/healthz</code> and <code>/readyz</code>. Scopes are named by id or key. The machine-readable form is <code>/openapi.json</code>.</p>
<p>Each route's answer is described below; a refused request answers <code>{"error", "detail"?, "code"?, "problems"?}</code> (400 with <code>problems</code> for a bad part, 401, 404, 409, 500). Shared schemas:</p>
<pre>${escape(JSON.stringify(doc.components?.schemas ?? {}, null, 2))}</pre>
${sections.join('\n')}
</body></html>
`;
}
