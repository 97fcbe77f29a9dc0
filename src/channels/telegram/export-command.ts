/**
 * `/export` on Telegram: the two export files (src/channels/commands/export.ts) sent as
 * documents. Files over the Bot API's 50 MB upload limit are not attempted.
 */
import { InputFile, type Composer } from 'grammy';
import type { ScopeArchive } from '../../export/scope-archive';
import { buildExportFiles, exportCounts } from '../commands/export';
import { sendText } from './send-text';
import type { NocturneContext } from './telegram-context';

/** The Bot API's limit for a file a bot uploads. */
const MAX_UPLOAD_BYTES = 50 * 1024 * 1024;

/** Registers `/export`. */
export function registerExportCommand(composer: Composer<NocturneContext>, deps: { archive: Pick<ScopeArchive, 'export'> }): void {
  composer.command('export', async (ctx) => {
    await ctx.replyWithChatAction('upload_document').catch(() => undefined);
    const files = await buildExportFiles(deps.archive, ctx.scope);
    if (files.json.length > MAX_UPLOAD_BYTES || files.markdown.length > MAX_UPLOAD_BYTES) {
      await sendText(
        ctx.api,
        ctx.chat.id,
        `Your memory is too large to send here (${Math.ceil(files.json.length / 1024 / 1024)} MB; Telegram takes up to 50 MB). Ask my owner for an export from the command line.`,
      );
      return;
    }
    await ctx.api.sendDocument(ctx.chat.id, new InputFile(files.json, `${files.stem}.json`), {
      caption: `Everything I keep about this chat (${exportCounts(files)}), as JSON: the complete export.`,
    });
    await ctx.api.sendDocument(ctx.chat.id, new InputFile(files.markdown, `${files.stem}.md`), {
      caption: 'The same, to read: what I know about you, then day by day.',
    });
  });
}
