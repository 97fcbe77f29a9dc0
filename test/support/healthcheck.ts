/**
 * The image's health check script, taken out of the Dockerfile (the `COPY <<'EOF' <path>` heredoc
 * whose path the HEALTHCHECK runs) and run with node the way Docker runs it: a fresh process with
 * the container's environment, answering by its exit status. The script's `require`s of the
 * project's drivers (better-sqlite3, pg) resolve to this repository's node_modules (NODE_PATH),
 * as they resolve to /app/node_modules in the image.
 */
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './databases';
import { ROOT, runCommand, type ProcessResult } from './run-process';

/** The script's text, exactly as the Dockerfile writes it into the image. */
export function healthcheckScriptText(): string {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const command = /^HEALTHCHECK\b(?:[^\n]*\\\n)*[^\n]*/m.exec(dockerfile)?.[0] ?? '';
  const script = /"node",\s*"([^"]+)"/.exec(command)?.[1];
  if (!script) throw new Error('the Dockerfile has no HEALTHCHECK running a node script');
  const escaped = script.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const heredoc = new RegExp(`^COPY <<-?'?([A-Za-z_]+)'? ${escaped}\\n([\\s\\S]*?)\\n\\1$`, 'm').exec(dockerfile);
  if (!heredoc) throw new Error(`the Dockerfile does not write ${script} with a COPY heredoc`);
  return heredoc[2]!;
}

let written: string | undefined;

/** Runs the health check with exactly `env` (plus PATH and NODE_PATH); exit 0 is healthy. */
export function runHealthcheck(env: Record<string, string>): Promise<ProcessResult> {
  if (!written) {
    written = path.join(tempDir('nocturne-healthcheck-'), 'docker-healthcheck.cjs');
    fs.writeFileSync(written, healthcheckScriptText());
  }
  return runCommand(process.execPath, [written], { PATH: process.env.PATH, NODE_PATH: path.join(ROOT, 'node_modules'), ...env });
}
