/**
 * The int8 copies of large scopes kept in memory, under one budget, and kept current with the file.
 *
 * Why a budget: a copy costs ~512 bytes per 512-dimension vector, so all scopes together stay under
 * `budgetBytes` (256 MiB by default, about 500,000 vectors); the least recently searched
 * scopes are dropped first, and a scope too large to fit is searched exactly (slow, still correct).
 *
 * Why versions: several processes may write to the same file. Each copy remembers the scope's
 * `scope_versions.version` it reflects; when `PRAGMA data_version` says someone committed, the
 * version is read again and a stale copy is dropped (and reloaded by the next search). This
 * process's own writes are applied to the copy directly.
 */
import type { VectorKind } from '../../memory/vectors/vector-index';
import { int8DotKernel } from './int8-dot-kernel';
import { createScopeScan, estimateScanBytes, type ScopeScan } from './int8-scope-scan';

/** What the cache reads from the file. */
export interface ScanSource {
  /** `PRAGMA data_version` as the index last read it. */
  dataVersion(): number;
  /** The scope's `scope_versions.version` (0 before its first write). */
  readVersion(scopeId: string): number;
  /**
   * Calls `each` for every int8 code of the scope and returns the scope's version, both read in
   * one read transaction so they agree.
   */
  readScope(scopeId: string, each: (rowid: number, kind: VectorKind, code: Buffer, scale: number) => void): number;
}

/** The in-memory copies, by scope. */
export interface ScanCache {
  /** The copy of a scope if there is one and it is current (a stale one is dropped). */
  cached(scopeId: string): ScopeScan | null;
  /** Loads a scope's int8 codes; null without WebAssembly SIMD or room in the budget. */
  load(scopeId: string, size: number, dimension: number): ScopeScan | null;
  /** Applies this process's own committed write to the copy (or drops it if it fell behind). */
  afterWrite(scopeId: string, version: number, apply: (scan: ScopeScan) => void): void;
  drop(scopeId: string): void;
  clear(): void;
}

/** An empty cache whose copies together stay under `budgetBytes`. */
export function createScanCache(source: ScanSource, budgetBytes: number): ScanCache {
  const scans = new Map<string, ScopeScan>();
  let useCounter = 0;

  function bytesInUse(): number {
    let total = 0;
    for (const scan of scans.values()) total += scan.bytes();
    return total;
  }

  /** Drops the least recently used copies (never `keep`) until `needed` more bytes fit. */
  function makeRoom(needed: number, keep?: string): boolean {
    let inUse = bytesInUse();
    if (needed > budgetBytes) return false;
    const byAge = [...scans.entries()].filter(([scopeId]) => scopeId !== keep).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [scopeId, scan] of byAge) {
      if (inUse + needed <= budgetBytes) break;
      inUse -= scan.bytes();
      scans.delete(scopeId);
    }
    return inUse + needed <= budgetBytes;
  }

  return {
    cached(scopeId) {
      const scan = scans.get(scopeId);
      if (!scan) return null;
      const dataVersion = source.dataVersion();
      if (scan.verifiedAt !== dataVersion) {
        if (source.readVersion(scopeId) !== scan.version) {
          scans.delete(scopeId);
          return null;
        }
        scan.verifiedAt = dataVersion;
      }
      scan.lastUsed = ++useCounter;
      return scan;
    },

    load(scopeId, size, dimension) {
      const kernel = int8DotKernel();
      if (!kernel || !makeRoom(estimateScanBytes(size, dimension), scopeId)) return null;
      const scan = createScopeScan(kernel, dimension, size);
      scan.version = source.readScope(scopeId, (rowid, kind, code, scale) => scan.set(rowid, kind, code, scale));
      scan.verifiedAt = source.dataVersion();
      scan.lastUsed = ++useCounter;
      scans.set(scopeId, scan);
      return scan;
    },

    afterWrite(scopeId, version, apply) {
      const scan = scans.get(scopeId);
      if (!scan) return;
      if (scan.version !== version - 1) {
        scans.delete(scopeId);
        return;
      }
      apply(scan);
      scan.version = version;
      if (!makeRoom(0, scopeId)) scans.delete(scopeId);
    },

    drop: (scopeId) => void scans.delete(scopeId),
    clear: () => scans.clear(),
  };
}
