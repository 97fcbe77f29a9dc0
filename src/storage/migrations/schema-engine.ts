/**
 * Loads Prisma's schema engine compiled to WebAssembly (@prisma/schema-engine-wasm) and connects
 * it to one of our driver adapters.
 *
 * The Prisma CLI drives a native schema engine that it downloads on first use; on a machine
 * without that download (air-gapped installs, this project's CI) `prisma migrate` cannot run.
 * The same engine ships on npm as WebAssembly, and it talks to the database through the same
 * driver adapters our clients use, so Nocturne migrates with no download at all.
 *
 * The package is an ES module that imports its .wasm file directly, which Node cannot do without
 * a flag; we instantiate the module ourselves and hand it to the package's bindings.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bindMigrationAwareSqlAdapterFactory, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';

/** The subset of the engine's API the migration runner uses (see schema_engine.d.ts). */
export interface SchemaEngine {
  applyMigrations(input: { migrationsList: MigrationList; filters: SchemaFilter }): Promise<{ appliedMigrationNames: string[] }>;
  devDiagnostic(input: { migrationsList: MigrationList; filters: SchemaFilter }): Promise<{ action: { tag: string; reason?: string } }>;
  createMigration(input: {
    draft: boolean;
    migrationName: string;
    migrationsList: MigrationList;
    schema: { files: SchemaFile[] };
    filters: SchemaFilter;
  }): Promise<{ generatedMigrationName: string; migrationScript: string | null; extension: string }>;
  free(): void;
}

export interface SchemaFile {
  readonly path: string;
  readonly content: string;
}

export interface MigrationList {
  baseDir: string;
  lockfile: { path: string; content: string | null };
  shadowDbInitScript: string;
  migrationDirectories: Array<{ path: string; migrationFile: { path: string; content: { tag: 'ok'; value: string } | { tag: 'error'; value: string } } }>;
}

export interface SchemaFilter {
  externalTables: string[];
  externalEnums: string[];
}

/** The few WebAssembly APIs used here (TypeScript's node typings do not declare them). */
interface WasmRuntime {
  instantiate(bytes: Uint8Array, imports: Record<string, unknown>): Promise<{ instance: { exports: Record<string, unknown> } }>;
}

interface EngineModule {
  SchemaEngine: { new: (options: { datamodels: [string, string][] }, log: (line: string) => void, adapter: object) => Promise<SchemaEngine> };
  __wbg_set_wasm(exports: Record<string, unknown>): void;
}

let modulePromise: Promise<EngineModule> | undefined;

async function loadModule(): Promise<EngineModule> {
  const dir = path.dirname(require.resolve('@prisma/schema-engine-wasm'));
  const bindings = (await import(path.join(dir, 'schema_engine_bg.js'))) as EngineModule;
  const bytes = await fs.promises.readFile(path.join(dir, 'schema_engine_bg.wasm'));
  const wasm = (globalThis as unknown as { WebAssembly: WasmRuntime }).WebAssembly;
  const { instance } = await wasm.instantiate(bytes, { './schema_engine_bg.js': bindings });
  bindings.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
  // The engine reports panics through this global; without it a panic is an opaque "unreachable".
  const registry = globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { set_message(message: string): void } };
  registry.PRISMA_WASM_PANIC_REGISTRY ??= { set_message: () => undefined };
  return bindings;
}

/** Starts a schema engine for the given schema files on the given database. */
export async function startSchemaEngine(params: {
  files: readonly SchemaFile[];
  adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  onLog?: (line: string) => void;
}): Promise<SchemaEngine> {
  modulePromise ??= loadModule();
  const engineModule = await modulePromise;
  return engineModule.SchemaEngine.new(
    { datamodels: params.files.map((file) => [file.path, file.content]) },
    params.onLog ?? (() => undefined),
    bindMigrationAwareSqlAdapterFactory(params.adapterFactory),
  );
}
