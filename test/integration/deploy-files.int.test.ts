/**
 * The deployment files (docker-compose.yml, Dockerfile, .dockerignore), checked by reading them:
 * Docker cannot run on the machines this suite runs on, so nothing is built or started. What is
 * checked is what breaks a deployment silently: a setting name the service does not know, a
 * missing health check or volume, a dependency that starts too early, a secret written into the
 * file, an image that runs as root. The one part that does run is the image's health check script,
 * taken out of the Dockerfile and run with node against a real SQLite database and the Telegram
 * heartbeat file the bot writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
// `yaml` is not a direct dependency: it comes with @fastify/swagger (a dependency), and is
// resolvable from the repository root; package.json is deliberately left alone for a test helper.
import { parse as parseYaml } from 'yaml';
import { createFileHeartbeat } from '../../src/channels/telegram/poll-heartbeat';
import { envSchema } from '../../src/config/schema';
import { openDatabase } from '../../src/storage/database';
import { sqliteDatabase, tempDir } from '../support/databases';
import { runHealthcheck } from '../support/healthcheck';
import { memoryLogger } from '../support/logger';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

// ---- Compose ------------------------------------------------------------------------------------

interface Healthcheck {
  test?: string | string[];
  disable?: boolean;
}

interface Service {
  image?: string;
  profiles?: string[];
  build?: string | { context?: string; dockerfile?: string };
  restart?: string;
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  ports?: (string | number | { host_ip?: string; published?: string | number })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: Healthcheck;
  entrypoint?: string | string[];
  command?: string | string[];
}

interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const compose = parseYaml(read('docker-compose.yml')) as ComposeFile;
const services = compose.services;

/** A service's environment as a mapping, whichever of the two Compose forms the file uses. */
function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const eq = entry.indexOf('=');
        return eq < 0 ? [entry, ''] : [entry.slice(0, eq), entry.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, value === null ? '' : String(value)]));
}

/**
 * Compose's interpolation (https://docs.docker.com/reference/compose-file/interpolation/):
 * `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`,
 * `${VAR:+replacement}`, `${VAR+replacement}`, nested in defaults.
 */
function interpolate(text: string, env: Record<string, string | undefined>): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char !== '$') {
      out += char;
      i += 1;
      continue;
    }
    if (text[i + 1] === '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (text[i + 1] !== '{') {
      const name = /^[_a-zA-Z][_a-zA-Z0-9]*/.exec(text.slice(i + 1))?.[0];
      out += name ? (env[name] ?? '') : '$';
      i += 1 + (name?.length ?? 0);
      continue;
    }
    // Find the matching brace, allowing nested ${...} in the operand.
    let depth = 1;
    let j = i + 2;
    for (; j < text.length && depth > 0; j += 1) {
      if (text[j] === '{') depth += 1;
      else if (text[j] === '}') depth -= 1;
    }
    if (depth !== 0) throw new Error(`unclosed \${ in ${JSON.stringify(text)}`);
    const body = text.slice(i + 2, j - 1);
    const match = /^([_a-zA-Z][_a-zA-Z0-9]*)(?:(:?[-?+])([\s\S]*))?$/.exec(body);
    if (!match) throw new Error(`unsupported interpolation \${${body}}`);
    const [, name, operator, operand = ''] = match;
    const value = env[name];
    const set = value !== undefined;
    const nonEmpty = set && value !== '';
    switch (operator) {
      case undefined:
        out += value ?? '';
        break;
      case ':-':
        out += nonEmpty ? value : interpolate(operand, env);
        break;
      case '-':
        out += set ? value : interpolate(operand, env);
        break;
      case ':?':
      case '?':
        if (operator === ':?' ? !nonEmpty : !set) throw new Error(`${name} is required: ${operand}`);
        out += value;
        break;
      case ':+':
        out += nonEmpty ? interpolate(operand, env) : '';
        break;
      case '+':
        out += set ? interpolate(operand, env) : '';
        break;
    }
    i = j;
  }
  return out;
}

/** Whole-value `${NAME...}` reference: the value comes from the host environment or .env. */
const REFERENCE = /^\$\{([_a-zA-Z][_a-zA-Z0-9]*)(?:(:?[-?+])([^}]*))?\}$/;

function dependencies(service: Service): Record<string, string | undefined> {
  const deps = service.depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name) => [name, undefined]));
  return Object.fromEntries(Object.entries(deps).map(([name, dep]) => [name, dep?.condition]));
}

function namedVolumeMounts(service: Service): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const volume of service.volumes ?? []) {
    const [source, target] = typeof volume === 'string' ? volume.split(':') : [volume.type === 'volume' ? volume.source : undefined, volume.target];
    // A named volume's source is a plain name; a bind mount's is a path.
    if (source && target && /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(source)) mounts.set(target, source);
  }
  return mounts;
}

const flat = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(' ') : (value ?? ''));

/** Where each stateful service keeps its state. */
const STATE = {
  postgres: '/var/lib/postgresql/data',
  qdrant: '/qdrant/storage',
  ollama: '/root/.ollama',
  nocturne: '/data',
} as const;

/** Services that run until stopped (ollama-pull runs once and exits). */
const LONG_RUNNING = ['postgres', 'qdrant', 'ollama', 'nocturne'] as const;

const schemaKeys = new Set(Object.keys(envSchema.shape));
const nocturneEnv = environmentOf(services.nocturne ?? {});

describe('docker-compose.yml', () => {
  it('has the five services: PostgreSQL, Qdrant, Ollama, the one-shot model pull and Nocturne', () => {
    const byDefault = Object.entries(services)
      .filter(([, service]) => !service.profiles)
      .map(([name]) => name);
    expect(byDefault.sort()).toEqual(['nocturne', 'ollama', 'ollama-pull', 'postgres', 'qdrant']);
    // Pinned like the others: a minor release, never a floating major (issue 17).
    expect(services.postgres.image).toMatch(/^postgres:16\.\d+(-[a-z0-9.-]+)?$/);
    expect(services.qdrant.image).toMatch(/^qdrant\/qdrant(:|$)/);
    expect(services.ollama.image).toMatch(/^ollama\/ollama(:|$)/);
    expect(services['ollama-pull'].image).toBe(services.ollama.image);
  });

  it.each(Object.entries(STATE))('keeps the state of %s in a declared named volume at %s', (name, target) => {
    const source = namedVolumeMounts(services[name]).get(target);
    expect(source).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(source);
  });

  it('gives no two services the same volume', () => {
    const sources = Object.keys(STATE).map((name) => namedVolumeMounts(services[name]).get(STATE[name as keyof typeof STATE]));
    expect(new Set(sources).size).toBe(sources.length);
  });

  it.each(LONG_RUNNING.filter((name) => name !== 'nocturne'))('health-checks %s with a command the image has', (name) => {
    const check = services[name].healthcheck;
    expect(check?.disable).not.toBe(true);
    expect(Array.isArray(check?.test) ? check?.test[0] : 'CMD-SHELL').toMatch(/^CMD(-SHELL)?$/);
    const command = flat(check?.test);
    // None of these images ships curl or wget.
    expect(command).not.toMatch(/\b(curl|wget)\b/);
    expect(command).toMatch({ postgres: /pg_isready/, qdrant: /\/dev\/tcp\/127\.0\.0\.1\/6333.*readyz/, ollama: /ollama list/ }[name] as RegExp);
  });

  it('health-checks nocturne through the image it builds (the Dockerfile HEALTHCHECK)', () => {
    const check = services.nocturne.healthcheck;
    if (check) {
      expect(check.disable).not.toBe(true);
      expect(flat(check.test)).not.toMatch(/^NONE$/);
    } else {
      const context = typeof services.nocturne.build === 'string' ? services.nocturne.build : services.nocturne.build?.context;
      const dockerfile = (typeof services.nocturne.build === 'object' && services.nocturne.build.dockerfile) || 'Dockerfile';
      expect(context).toBe('.');
      expect(finalStage(parseDockerfile(read(dockerfile))).instructions.some((i) => i.keyword === 'HEALTHCHECK' && !/^NONE\b/i.test(i.args))).toBe(true);
    }
  });

  it('restarts the long-running services and not the one-shot pull', () => {
    for (const name of LONG_RUNNING) expect(services[name].restart).toBe('unless-stopped');
    expect(services['ollama-pull'].restart).toBe('no');
  });

  it('pulls the chat and the embedding models once Ollama is healthy, then exits', () => {
    const pull = services['ollama-pull'];
    expect(dependencies(pull)).toEqual({ ollama: 'service_healthy' });
    const env = environmentOf(pull);
    expect(env.OLLAMA_HOST).toBe('http://ollama:11434');
    const script = `${flat(pull.entrypoint)} ${flat(pull.command)}`;
    expect(script.match(/ollama pull/g)).toHaveLength(2);
    // The defaults are Nocturne's own: llama3.2 for chat, nomic-embed-text for embeddings.
    expect(script).toContain('llama3.2');
    expect(interpolate(env.EMBEDDING_MODEL, {})).toBe(envSchema.shape.EMBEDDING_MODEL.parse(undefined));
    // Both sides default to the same embedding model.
    expect(env.EMBEDDING_MODEL).toBe(nocturneEnv.EMBEDDING_MODEL);
  });

  it('starts nocturne only after PostgreSQL and Qdrant are healthy and the models are pulled', () => {
    expect(dependencies(services.nocturne)).toEqual({
      postgres: 'service_healthy',
      qdrant: 'service_healthy',
      ollama: 'service_healthy',
      'ollama-pull': 'service_completed_successfully',
    });
  });

  it('builds nocturne from the Dockerfile in this folder', () => {
    const build = services.nocturne.build;
    expect(typeof build === 'string' ? build : build?.context).toBe('.');
    expect(fs.existsSync(path.join(ROOT, 'Dockerfile'))).toBe(true);
  });

  it('gives nocturne only settings that exist in the config schema', () => {
    const unknown = Object.keys(nocturneEnv).filter((name) => !schemaKeys.has(name));
    expect(unknown).toEqual([]);
  });

  it('points nocturne at the other services and at its volume', () => {
    const env = Object.fromEntries(Object.entries(nocturneEnv).map(([key, value]) => [key, interpolate(value, {})]));
    expect(env).toMatchObject({
      DATA_DIR: STATE.nocturne,
      DB_PROVIDER: 'postgres',
      VECTOR_STORE: 'qdrant',
      QDRANT_URL: 'http://qdrant:6333',
      EMBEDDER: 'ollama',
      OLLAMA_HOST: 'http://ollama:11434',
    });
    const db = new URL(env.DATABASE_URL);
    const postgresEnv = environmentOf(services.postgres);
    expect(db.protocol).toBe('postgresql:');
    expect(db.host).toBe('postgres:5432');
    expect(db.username).toBe(postgresEnv.POSTGRES_USER);
    expect(db.pathname).toBe(`/${postgresEnv.POSTGRES_DB}`);
    // The URL carries the same password PostgreSQL is created with, by reference.
    expect(new URL(nocturneEnv.DATABASE_URL.replace(/\$\{[^}]*\}/, 'x')).password).toBe('x');
    expect(nocturneEnv.DATABASE_URL).toContain(postgresEnv.POSTGRES_PASSWORD);
  });

  it.each([
    ['with nothing set in the host environment', {}],
    [
      'with an Anthropic key, a bot token and an admin token',
      { ANTHROPIC_API_KEY: 'sk-ant-example', TELEGRAM_BOT_TOKEN: '123456:ABC-def_ghi', ADMIN_TOKEN: 'an-admin-token-of-32-characters!', TZ: 'Europe/Madrid' },
    ],
  ])('gives nocturne a configuration the schema accepts %s', (_, host: Record<string, string>) => {
    // Empty values count as unset, as loadConfig treats them.
    const env = Object.fromEntries(
      Object.entries(nocturneEnv)
        .map(([key, value]) => [key, interpolate(value, host)])
        .filter(([, value]) => value !== ''),
    );
    const result = envSchema.safeParse(env);
    expect(result.success ? [] : result.error.issues).toEqual([]);
  });

  it('writes no secret into the file: keys, tokens and passwords are ${...} references', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of Object.entries(environmentOf(service))) {
        if (!/(_KEY|_TOKEN|_SECRET|PASSWORD)$/.test(key)) continue;
        const reference = REFERENCE.exec(value);
        expect({ service: name, key, reference: reference?.[1] }).toEqual({ service: name, key, reference: key });
        const [, , operator, fallback] = reference ?? [];
        // Only PostgreSQL's password may have a placeholder default (commented in the file).
        if (key !== 'POSTGRES_PASSWORD') expect({ key, fallback: operator === ':-' || operator === '-' ? fallback : '' }).toEqual({ key, fallback: '' });
      }
      // Passwords inside URLs are references too.
      for (const [key, value] of Object.entries(environmentOf(service))) {
        const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^@/]*)@/i.exec(value)?.[1];
        if (userinfo?.includes(':'))
          expect({ key, password: userinfo.slice(userinfo.indexOf(':') + 1) }).toEqual({ key, password: expect.stringMatching(REFERENCE) });
      }
    }
  });

  it('says what it publishes: only nocturne, only on loopback, and the words say so (issue 17)', () => {
    const publishing = Object.entries(services)
      .filter(([, service]) => (service.ports ?? []).length > 0)
      .map(([name]) => name);
    expect(publishing).toEqual(['nocturne', 'nocturne-2']);
    for (const text of [read('docker-compose.yml'), read('docs/deploy.md')]) {
      expect(text).not.toMatch(/nothing is published/i);
      expect(text).toMatch(/127\.0\.0\.1/);
    }
  });

  it('passes through the settings a person sets for digests, groups and servers (issue 17)', () => {
    for (const name of ['DIGEST_TIME', 'TELEGRAM_GROUPS', 'TELEGRAM_API_ROOT', 'ANTHROPIC_BASE_URL']) {
      expect(Object.keys(nocturneEnv)).toContain(name);
      expect(read('docs/deploy.md')).toContain(`\`${name}\``);
    }
  });

  it('runs a second replica in the replicas profile: same image and settings, its own volume and port, Telegram webhook mode passed through', () => {
    const replica = services['nocturne-2']!;
    expect(replica.profiles).toEqual(['replicas']);
    expect(replica.image).toBe(services.nocturne.image);
    expect(environmentOf(replica)).toEqual(nocturneEnv);
    expect(dependencies(replica)).toEqual({ nocturne: 'service_healthy' });
    expect(replica.restart).toBe('unless-stopped');
    const own = namedVolumeMounts(replica).get(STATE.nocturne);
    expect(own).toBeDefined();
    expect(own).not.toBe(namedVolumeMounts(services.nocturne).get(STATE.nocturne));
    expect(Object.keys(compose.volumes ?? {})).toContain(own);
    const published = (service: Service) => (service.ports ?? []).map((port) => String(port).split(':').slice(0, 2).join(':'));
    expect(published(replica)).toEqual(['127.0.0.1:8789']);
    expect(published(services.nocturne)).not.toContain('127.0.0.1:8789');
    for (const name of ['TELEGRAM_MODE', 'TELEGRAM_WEBHOOK_URL', 'TELEGRAM_WEBHOOK_SECRET']) expect(Object.keys(nocturneEnv)).toContain(name);
    const env = Object.fromEntries(
      Object.entries(nocturneEnv)
        .map(([key, value]) => [
          key,
          interpolate(value, {
            TELEGRAM_BOT_TOKEN: '123456:ABC-def_ghi',
            TELEGRAM_MODE: 'webhook',
            TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram',
            TELEGRAM_WEBHOOK_SECRET: 'a'.repeat(64),
          }),
        ])
        .filter(([, value]) => value !== ''),
    );
    expect(envSchema.safeParse(env).success).toBe(true);
    expect(read('docs/deploy.md')).toMatch(/--profile replicas/);
    expect(read('docs/deploy.md')).toMatch(/TELEGRAM_MODE=webhook/);
  });

  it('publishes no port beyond the loopback interface', () => {
    for (const service of Object.values(services)) {
      for (const port of service.ports ?? []) {
        const hostIp = typeof port === 'object' ? port.host_ip : String(port).split(':').length === 3 ? String(port).split(':')[0] : undefined;
        expect(hostIp).toBe('127.0.0.1');
      }
    }
  });
});

describe('Compose interpolation used by the test', () => {
  it('follows the documented rules', () => {
    const env = { SET: 'value', EMPTY: '' };
    expect(interpolate('${SET:-d}|${EMPTY:-d}|${EMPTY-d}|${UNSET-d}|${UNSET:-${SET}}', env)).toBe('value|d||d|value');
    expect(interpolate('${SET:+yes}|${EMPTY:+yes}|${EMPTY+yes}|$$SET|$SET', env)).toBe('yes||yes|$SET|value');
    expect(() => interpolate('${UNSET:?needed}', env)).toThrow(/needed/);
  });
});

// ---- Dockerfile ---------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
  /** Bodies of heredocs (`COPY <<EOF dest`). */
  heredocs: string[];
}

interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

/** Splits a Dockerfile into stages of instructions: comments dropped, continuations joined, heredocs kept apart. */
function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const lines = text.split('\n');
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (/^\s*(#|$)/.test(lines[i])) continue;
    let line = lines[i];
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      i += 1;
      if (/^\s*#/.test(lines[i])) continue;
      line = line.replace(/\\\s*$/, ' ') + lines[i].trim();
    }
    const [, keyword, rest = ''] = /^\s*(\S+)\s*([\s\S]*)$/.exec(line) ?? [];
    const heredocs: string[] = [];
    for (const [, delimiter] of rest.matchAll(/<<-?['"]?([A-Za-z_]+)['"]?/g)) {
      const body: string[] = [];
      for (i += 1; i < lines.length && lines[i].trim() !== delimiter; i += 1) body.push(lines[i]);
      heredocs.push(body.join('\n'));
    }
    const instruction = { keyword: keyword.toUpperCase(), args: rest.trim(), heredocs };
    if (instruction.keyword === 'FROM') {
      const [from, as, name] = instruction.args.replace(/--platform=\S+\s+/, '').split(/\s+/);
      stages.push({
        from: from.replace(/^\$\{?(\w+)\}?$/, (_, arg: string) => args[arg] ?? from),
        name: as?.toUpperCase() === 'AS' ? name : undefined,
        instructions: [],
      });
    } else if (stages.length === 0) {
      if (instruction.keyword === 'ARG') {
        const [name, value = ''] = instruction.args.split('=');
        args[name] = value;
      }
    } else {
      stages[stages.length - 1].instructions.push(instruction);
    }
  }
  return { args, stages };
}

const finalStage = (file: { stages: Stage[] }) => file.stages[file.stages.length - 1];
const dockerfile = parseDockerfile(read('Dockerfile'));
const runtime = finalStage(dockerfile);
const buildStages = dockerfile.stages.slice(0, -1);
const of = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);

/** A JSON-array (exec form) argument, or the words of a shell form. */
const execForm = (args: string): string[] => (args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/));

describe('Dockerfile', () => {
  it('has a build stage and a slim Node 20 runtime stage', () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    expect(runtime.from).toMatch(/^node:20[.\d]*-(bookworm-)?slim$/);
  });

  it('installs with npm ci, builds better-sqlite3 and generates the Prisma clients in the build stage', () => {
    const runs = buildStages.flatMap((stage) => of(stage, 'RUN').map((i) => i.args)).join('\n');
    expect(runs).toMatch(/\bnpm ci\b/);
    expect(runs).toMatch(/\bnpm run generate\b/);
    expect(runs).toMatch(/\bapt-get install\b.*\bpython3\b.*\bmake\b.*\bg\+\+/);
    expect(runs).toMatch(/\bnpm rebuild better-sqlite3\b/);
    expect(runs).toMatch(/\bnpm prune --omit=dev\b/);
    // The runtime runs dist/: built here, from the sources and the build script the context keeps.
    expect(runs).toMatch(/\bnpm run build\b/);
  });

  it('installs nothing in the runtime stage and copies only what the service needs', () => {
    expect(
      of(runtime, 'RUN')
        .map((i) => i.args)
        .join('\n'),
    ).not.toMatch(/\bnpm (ci|install|i)\b|apt-get install/);
    const copied = of(runtime, 'COPY')
      .filter((i) => i.args.includes('--from='))
      .flatMap((i) =>
        execForm(i.args)
          .filter((word) => !word.startsWith('--'))
          .slice(0, -1),
      )
      .map((source) => path.basename(source))
      .sort();
    expect(copied).toEqual(['dist', 'node_modules', 'package-lock.json', 'package.json', 'prisma']);
  });

  it('runs as a non-root user in /app with DATA_DIR=/data as a volume that user owns', () => {
    const users = of(runtime, 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^(root|0)(:|$)/);
    const user = users[users.length - 1].split(':')[0];
    expect(
      of(runtime, 'WORKDIR')
        .map((i) => i.args)
        .pop(),
    ).toBe('/app');
    expect(
      of(runtime, 'ENV')
        .map((i) => i.args)
        .join(' '),
    ).toMatch(/\bDATA_DIR=\/data\b/);
    expect(of(runtime, 'VOLUME').flatMap((i) => execForm(i.args))).toEqual(['/data']);
    // Owned before VOLUME: changes to a volume's path after the declaration are discarded.
    const chown = runtime.instructions.findIndex((i) => i.keyword === 'RUN' && new RegExp(`chown ${user}(:${user})? /data`).test(i.args));
    expect(chown).toBeGreaterThanOrEqual(0);
    expect(chown).toBeLessThan(runtime.instructions.findIndex((i) => i.keyword === 'VOLUME'));
  });

  it('has a health check that needs nothing beyond node', () => {
    const [check] = of(runtime, 'HEALTHCHECK');
    expect(check).toBeDefined();
    const command = check.args.replace(/^(--\S+\s+)*CMD\s+/, '');
    expect(execForm(command)[0]).toBe('node');
    // The script it runs is written into the image by the Dockerfile itself.
    const script = execForm(command)[1];
    const copy = of(runtime, 'COPY').find((i) => i.heredocs.length > 0 && i.args.endsWith(script));
    expect(copy?.heredocs[0]).toMatch(/_prisma_migrations/);
    expect(copy?.heredocs[0]).not.toMatch(/require\('(?!node:|pg'|better-sqlite3')/);
  });

  it('starts the same entry point as npm start', () => {
    const [cmd] = of(runtime, 'CMD').slice(-1);
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    // `exec` makes the shell npm runs the script in become node, so npm's SIGTERM reaches it.
    expect(start).toMatch(/^exec /);
    expect(execForm(cmd.args).join(' ')).toBe(start.replace(/^exec /, ''));
  });

  it('exposes a port only if the service serves one (a *_PORT setting with that default)', () => {
    const served = Object.entries(envSchema.shape)
      .filter(([name]) => name.endsWith('_PORT'))
      .map(([, setting]) => String((setting as { parse(value: unknown): unknown }).parse(undefined)));
    for (const expose of of(runtime, 'EXPOSE')) {
      for (const port of expose.args.split(/\s+/)) expect(served).toContain(port.replace(/\/tcp$/, ''));
    }
  });
});

describe('the image health check, run (issue 17: is the bot polling?)', () => {
  const token = '123456789:AAHealthcheckTokenForTestsOnly_abcdefg';
  let dataDir: string;

  /** A heartbeat written by the bot's own writer, `ageSeconds` old. */
  const beat = (dir: string, ageSeconds: number) =>
    createFileHeartbeat({
      file: path.join(dir, 'telegram-heartbeat'),
      logger: memoryLogger().logger,
      clock: () => new Date(Date.now() - ageSeconds * 1000),
    }).beat();

  beforeAll(async () => {
    // A database as start-up leaves it: the real migrations applied.
    dataDir = tempDir('nocturne-healthcheck-data-');
    const db = await openDatabase({ database: sqliteDatabase(dataDir), logger: memoryLogger().logger });
    await db.close();
  });

  it('without Telegram, passes on the database alone, and fails without one', async () => {
    expect(await runHealthcheck({ DATA_DIR: dataDir })).toMatchObject({ code: 0 });
    // Compose passes an unset token as an empty value: Telegram is not configured.
    expect(await runHealthcheck({ DATA_DIR: dataDir, TELEGRAM_BOT_TOKEN: '' })).toMatchObject({ code: 0 });
    const empty = await runHealthcheck({ DATA_DIR: tempDir('nocturne-healthcheck-empty-') });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/^unhealthy: /);
  });

  it('with Telegram configured, passes on a fresh heartbeat', async () => {
    beat(dataDir, 2);
    const result = await runHealthcheck({ DATA_DIR: dataDir, TELEGRAM_BOT_TOKEN: token });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('with Telegram configured, fails on a stale heartbeat, naming its age and the limit', async () => {
    beat(dataDir, 600);
    const result = await runHealthcheck({ DATA_DIR: dataDir, TELEGRAM_BOT_TOKEN: token });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unhealthy: the Telegram bot has not completed a poll for 60\d s \(limit 120 s\)/);
    expect(result.stderr).not.toContain(token);
  });

  it('with Telegram configured, fails when the bot has never written a heartbeat', async () => {
    const dir = tempDir('nocturne-healthcheck-nobeat-');
    const db = await openDatabase({ database: sqliteDatabase(dir), logger: memoryLogger().logger });
    await db.close();
    expect(await runHealthcheck({ DATA_DIR: dir })).toMatchObject({ code: 0 });
    const result = await runHealthcheck({ DATA_DIR: dir, TELEGRAM_BOT_TOKEN: token });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unhealthy: the Telegram bot has not polled yet/);
    // A webhook replica polls nothing (Telegram posts to it): no heartbeat is asked of it.
    expect(await runHealthcheck({ DATA_DIR: dir, TELEGRAM_BOT_TOKEN: token, TELEGRAM_MODE: 'webhook' })).toMatchObject({ code: 0 });
  });

  it('takes its limit from TELEGRAM_HEARTBEAT_MAX_AGE (default 120 s)', async () => {
    beat(dataDir, 90);
    expect(await runHealthcheck({ DATA_DIR: dataDir, TELEGRAM_BOT_TOKEN: token })).toMatchObject({ code: 0 });
    expect(await runHealthcheck({ DATA_DIR: dataDir, TELEGRAM_BOT_TOKEN: token, TELEGRAM_HEARTBEAT_MAX_AGE: '60' })).toMatchObject({ code: 1 });
    expect(String(envSchema.shape.TELEGRAM_HEARTBEAT_MAX_AGE.parse(undefined))).toBe('120');
  });
});

describe('.dockerignore', () => {
  it('keeps local installs, generated clients, data, secrets and git out of the build context', () => {
    const entries = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    for (const entry of ['node_modules', 'src/generated', 'dist', 'data', '.env', '.git', 'coverage', '*.db']) expect(entries).toContain(entry);
  });
});
