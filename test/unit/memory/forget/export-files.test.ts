/**
 * The export scrub touches only files Nocturne could have written for the scope: its own folder,
 * the names it writes, no links, never the store's files, whatever the key looks like.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportFolderName, isExportFileName } from '../../../../src/memory/archive/export-paths';
import { recordExportFiles } from '../../../../src/memory/archive/export-registry';
import { scopeExportFiles, scrubExportFiles } from '../../../../src/memory/forget/export-files';

const dirs: string[] = [];
function dataDir(): { data: string; exports: string } {
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'nocturne-export-files-'));
  dirs.push(data);
  const exports = path.join(data, 'exports');
  fs.mkdirSync(exports);
  return { data, exports };
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('export folders', () => {
  it('are the scope\u2019s alone and never climb, whatever the key', () => {
    const names = ['..', '.', 'kim:lee', 'kim-lee', 'a/../b', '', '\u00e8\u00e8'].map((key, i) => exportFolderName({ id: `id-${i}`, key }));
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(name).toMatch(/^[A-Za-z0-9_-]+-[0-9a-f]{16}$/);
      expect(path.basename(name)).toBe(name);
    }
    expect(exportFolderName({ id: 'same', key: 'kim:lee' })).not.toBe(exportFolderName({ id: 'other', key: 'kim:lee' }));
  });

  it('hold only the names Nocturne writes', () => {
    for (const ok of ['MEMORY.md', 'memory/2026-01-05.md', 'nocturne-terminal-ana.json', 'nocturne-x.md']) expect(isExportFileName(ok)).toBe(true);
    for (const no of ['nocturne.db', 'nocturne.db-wal', 'memory/notes.md', 'other/MEMORY.md', '../MEMORY.md', 'memory/../MEMORY.md', 'nocturne-.json'])
      expect(isExportFileName(no)).toBe(false);
  });
});

describe('the export scrub', () => {
  it('never follows a link out of the folder, and never touches the store\u2019s files', async () => {
    const { data, exports } = dataDir();
    const scope = { id: 'scope-1', key: 'ana' };
    const folder = path.join(exports, exportFolderName(scope));
    fs.mkdirSync(path.join(folder, 'memory'), { recursive: true });
    const db = path.join(data, 'nocturne.db');
    fs.writeFileSync(db, 'quince quince');
    fs.writeFileSync(path.join(folder, 'MEMORY.md'), '- quince\n- pear\n');
    fs.symlinkSync(db, path.join(folder, 'nocturne-ana.json'));
    fs.symlinkSync(db, path.join(folder, 'memory', '2026-01-05.md'));
    fs.writeFileSync(path.join(folder, 'notes.json'), 'quince');

    const found = await scopeExportFiles({ exportsDir: exports, scope, protectedFiles: [db] });
    expect(found).toEqual([{ file: path.join(fs.realpathSync(folder), 'MEMORY.md'), kind: 'markdown' }]);
    const scrub = await scrubExportFiles({ exportsDir: exports, scope, protectedFiles: [db], holds: (t) => t.includes('quince') });
    expect(scrub.deleted).toEqual([]);
    expect(fs.readFileSync(db, 'utf8')).toBe('quince quince');
    expect(fs.readFileSync(path.join(folder, 'notes.json'), 'utf8')).toBe('quince');
    expect(fs.readFileSync(path.join(folder, 'MEMORY.md'), 'utf8')).toBe('- pear\n');
  });

  it('finds nothing when the scope\u2019s folder is a link (to DATA_DIR, say)', async () => {
    const { data, exports } = dataDir();
    const scope = { id: 'scope-2', key: '..' };
    fs.writeFileSync(path.join(data, 'MEMORY.md'), '- quince\n');
    fs.symlinkSync(data, path.join(exports, exportFolderName(scope)));
    await scrubExportFiles({ exportsDir: exports, scope, holds: (t) => t.includes('quince') });
    expect(fs.readFileSync(path.join(data, 'MEMORY.md'), 'utf8')).toBe('- quince\n');
  });

  it('never lets a protected file go, even inside the scope\u2019s folder', async () => {
    const { exports } = dataDir();
    const scope = { id: 'scope-3', key: 'ana' };
    const folder = path.join(exports, exportFolderName(scope));
    fs.mkdirSync(folder);
    const json = path.join(folder, 'nocturne-ana.json');
    fs.writeFileSync(json, 'quince');
    await scrubExportFiles({ exportsDir: exports, scope, protectedFiles: [json], holds: (t) => t.includes('quince') });
    expect(fs.existsSync(json)).toBe(true);
  });

  it('reaches a recorded file wherever it is, reads JSON strings decoded, and leaves a file the person put there since', async () => {
    const { data, exports } = dataDir();
    const scope = { id: 'scope-4', key: 'ana' };
    const [json, markdown, replaced] = await recordExportFiles(exports, scope.id, [
      { file: path.join(data, 'elsewhere', 'ana.json'), kind: 'json' },
      { file: path.join(data, 'notes', 'MEMORY.md'), kind: 'markdown' },
      { file: path.join(data, 'notes', 'memory', '2026-01-05.md'), kind: 'markdown' },
    ]);
    fs.writeFileSync(json!, `${JSON.stringify({ format: 'nocturne.scope-export', episodes: [{ content: 'a long day\nQuince jam at last' }] }, null, 2)}\n`);
    fs.writeFileSync(markdown!, '# MEMORY.md: Ana\n\n- **10:00 Ana (user):** first line\n  quince jam, the second line\n- pear\n');
    fs.writeFileSync(replaced!, 'my own notes about quince\n');
    const holds = (t: string) => /\bquince\b/i.test(t);
    const preview = await scrubExportFiles({ exportsDir: exports, scope, holds, goneLines: new Set(['- **10:00 Ana (user):** first line']), dryRun: true });
    expect(preview).toEqual({ rewritten: [markdown], deleted: [json] });
    expect(fs.existsSync(json!)).toBe(true);
    await scrubExportFiles({ exportsDir: exports, scope, holds, goneLines: new Set(['- **10:00 Ana (user):** first line']) });
    expect(fs.existsSync(json!)).toBe(false);
    expect(fs.readFileSync(markdown!, 'utf8')).toBe('# MEMORY.md: Ana\n\n- pear\n');
    expect(fs.readFileSync(replaced!, 'utf8')).toBe('my own notes about quince\n');
  });
});
