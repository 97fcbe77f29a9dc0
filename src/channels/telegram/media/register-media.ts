/**
 * Photos, documents and voice or video notes, read rather than only noted (registered before the
 * conversation's catch-all, which still takes every other kind: locations, contacts and stickers
 * arrive there as short text such as `[location 38.72230, -9.13930]`, see inbound.ts):
 * - a photo is described by the model when it can see, and the description is what is stored
 *   (`[photo] ...`, the caption after it); when it cannot, the caption alone is kept and the
 *   person is told once;
 * - a text, Markdown or PDF document is read into memory as parts (document-episodes.ts) and the
 *   person told how many; anything else, oversize or without text, gets a reply saying why;
 * - a voice or video note is transcribed when a transcription server is configured; otherwise it
 *   is stored as `[voice message, 0:12]` and the person told once that voice is not understood.
 * The bytes are held in memory while read and never stored; the episode keeps Telegram's file id.
 * In a group, media not meant for the bot go on to the catch-all, which stores them as noted.
 */
import type { Composer } from 'grammy';
import type { Attachment, InboundMessage } from '../../../agent/inbound-message';
import { HANDLER_FAILED_TEXT } from '../../commands/replies';
import type { ConversationHandler } from '../../conversation-handler';
import type { Logger } from '../../../shared/logger';
import { addressedToBot } from '../conversation';
import { toInboundMessage } from '../inbound';
import { sendText } from '../send-text';
import type { NocturneContext } from '../telegram-context';
import { storeDocumentParts } from './document-episodes';
import { documentKind, readDocument } from './document-text';
import type { TelegramMediaOptions } from './media-options';
import { CANNOT_SEE_TEXT, documentReadText, documentRefusedText, tooLargeText, VOICE_NOT_UNDERSTOOD_TEXT } from './media-replies';
import { checkStatedSize, downloadFile, FileTooLargeError, type FileSource } from './telegram-file';
import { createToldOnce } from './told-once';

export interface MediaDeps {
  readonly media: TelegramMediaOptions;
  readonly handler: ConversationHandler;
  readonly logger: Logger;
  /** Where files are downloaded from: the Bot API root and the token (never logged). */
  readonly files: Omit<FileSource, 'api'>;
}

/** Said when a voice message could not be transcribed this time (the server failed). */
const TRANSCRIPTION_FAILED_TEXT = 'I could not make out your voice message just now (transcription failed), so I only noted that you sent it.';

/** `m:ss` (or `h:mm:ss`) for a duration in seconds. */
function clock(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

export function registerMedia(composer: Composer<NocturneContext>, deps: MediaDeps): void {
  const log = deps.logger.child({ component: 'telegram-media' });
  const toldOnce = createToldOnce();
  const { limits, describer, transcriber, episodes } = deps.media;

  /** Whether the bot should read this message (private chats; in a group, what is meant for it). */
  const forMe = (ctx: NocturneContext) =>
    ctx.chat?.type === 'private' || ctx.scope.groupReplies === 'all' || (ctx.message !== undefined && addressedToBot(ctx.message, ctx.me));

  const say = (ctx: NocturneContext, text: string) => sendText(ctx.api, ctx.chat!.id, text);

  /** The message as the catch-all would build it, with the file id on its attachment and new text. */
  function inbound(ctx: NocturneContext, fileId: string, text?: string): InboundMessage | null {
    const base = toInboundMessage(ctx.message!, { key: ctx.scope.key, kind: ctx.scope.kind, title: '' });
    if (!base) return null;
    const attachments: Attachment[] = (base.attachments ?? []).map((a) => ({ ...a, fileId }));
    return { ...base, ...(text !== undefined && { text }), attachments };
  }

  /** Has the agent answer, as the conversation does (typing, the failure line, a quote in groups). */
  async function answer(ctx: NocturneContext, message: InboundMessage): Promise<void> {
    await ctx.replyWithChatAction('typing').catch(() => undefined);
    let text: string;
    try {
      text = await deps.handler.reply(message);
    } catch (error) {
      log.error('the conversation handler failed', { scopeKey: message.scopeKey, externalId: message.externalId, error });
      await say(ctx, HANDLER_FAILED_TEXT);
      return;
    }
    await sendText(ctx.api, ctx.chat!.id, text, ctx.chat!.type === 'private' ? {} : { replyToMessageId: ctx.message!.message_id });
  }

  const source = (ctx: NocturneContext): FileSource => ({ api: ctx.api, ...deps.files });

  composer.on('message:photo', async (ctx, next) => {
    if (!forMe(ctx)) return next();
    const sizes = ctx.message.photo;
    const largest = sizes[sizes.length - 1]!;
    const caption = ctx.message.caption?.trim() ?? '';
    let description: string | undefined;
    let blind = !describer?.canSee();
    if (describer && !blind) {
      try {
        checkStatedSize(largest.file_size, limits.maxFileBytes);
        const bytes = await downloadFile(source(ctx), largest.file_id, limits.maxFileBytes);
        const seen = await describer.describe({ bytes, mime: 'image/jpeg', ...(caption && { caption }), scopeId: ctx.scope.id });
        if (seen.kind === 'described') description = seen.text;
        else blind = true;
      } catch (error) {
        if (error instanceof FileTooLargeError) await say(ctx, tooLargeText('The photo', error.size, error.maxBytes));
        else log.warn('a photo could not be described; its caption is kept', { scopeKey: ctx.scope.key, error });
      }
    }
    if (blind && toldOnce.first(ctx.scope.key, 'cannot-see')) await say(ctx, CANNOT_SEE_TEXT);
    const text = description ? [`[photo] ${description}`, caption && `Caption: ${caption}`].filter(Boolean).join('\n') : undefined;
    const message = inbound(ctx, largest.file_id, text);
    if (!message) return;
    // A photo nobody could see and nobody wrote about holds nothing to answer: noted, not answered.
    if (!description && caption === '') return void (await deps.handler.observe?.(message));
    await answer(ctx, message);
  });

  composer.on(['message:voice', 'message:video_note'], async (ctx, next) => {
    if (!forMe(ctx)) return next();
    const voice = ctx.message.voice;
    const note = ctx.message.video_note;
    const file = (voice ?? note)!;
    const label = `[${voice ? 'voice' : 'video'} message, ${clock(file.duration)}]`;
    if (!transcriber) {
      if (toldOnce.first(ctx.scope.key, 'voice')) await say(ctx, VOICE_NOT_UNDERSTOOD_TEXT);
      const message = inbound(ctx, file.file_id, label);
      if (message) await deps.handler.observe?.(message);
      return;
    }
    let words: string;
    try {
      checkStatedSize(file.file_size, limits.maxFileBytes);
      const bytes = await downloadFile(source(ctx), file.file_id, limits.maxFileBytes);
      words = await transcriber.transcribe(
        voice ? { bytes, mime: voice.mime_type ?? 'audio/ogg', filename: 'voice.ogg' } : { bytes, mime: 'video/mp4', filename: 'video-note.mp4' },
      );
    } catch (error) {
      if (error instanceof FileTooLargeError) await say(ctx, tooLargeText(voice ? 'The voice message' : 'The video message', error.size, error.maxBytes));
      else {
        log.warn('a voice message could not be transcribed; only its length is kept', { scopeKey: ctx.scope.key, error });
        await say(ctx, TRANSCRIPTION_FAILED_TEXT);
      }
      const message = inbound(ctx, file.file_id, label);
      if (message) await deps.handler.observe?.(message);
      return;
    }
    const message = inbound(ctx, file.file_id, words === '' ? label : `${label} ${words}`);
    if (!message) return;
    if (words === '') return void (await deps.handler.observe?.(message));
    await answer(ctx, message);
  });

  composer.on('message:document', async (ctx, next) => {
    if (!forMe(ctx)) return next();
    const document = ctx.message.document;
    const name = document.file_name?.trim() || 'the document';
    const caption = ctx.message.caption?.trim() ?? '';
    const noted = inbound(ctx, document.file_id);
    if (!noted) return;
    const kind = documentKind(document.mime_type, document.file_name);
    const refuse = async (text: string) => {
      await say(ctx, text);
      await deps.handler.observe?.(noted);
    };
    if (!kind || !episodes) return refuse(documentRefusedText(name, { reason: 'unsupported' }));
    let bytes: Buffer;
    try {
      checkStatedSize(document.file_size, limits.maxFileBytes);
      bytes = await downloadFile(source(ctx), document.file_id, limits.maxFileBytes);
    } catch (error) {
      if (error instanceof FileTooLargeError) return refuse(tooLargeText(`\u201c${name}\u201d`, error.size, error.maxBytes));
      throw error;
    }
    const read = await readDocument(bytes, kind, { maxPages: limits.documentMaxPages, maxParts: limits.documentMaxParts });
    if (!read.ok) return refuse(documentRefusedText(name, read));
    const stored = await storeDocumentParts(episodes, noted, { name, fileId: document.file_id, kind, parts: read.parts });
    log.info('read a document into memory', { scopeKey: ctx.scope.key, kind, parts: read.parts.length, new: stored });
    await say(ctx, documentReadText(name, read.parts.length, read.pages));
    const parts = `${read.parts.length} part${read.parts.length === 1 ? '' : 's'}`;
    const message: InboundMessage = { ...noted, text: `[document \u201c${name}\u201d, read into memory as ${parts}]${caption && ` ${caption}`}` };
    // A caption is something said about the document: answered; without one the note is enough.
    if (caption !== '') await answer(ctx, message);
    else await deps.handler.observe?.(message);
  });
}
