/**
 * What the Telegram bot needs to read media rather than only note them: the limits (from
 * `Config.media`), the model that describes photos, the transcription server and the episode
 * service that stores a document's parts. Each helper is optional: without a describer photos
 * keep their captions, without a transcriber voice messages are noted by their length, without
 * the episode service documents are noted by their name; the person is told once what is missing.
 */
import type { ImageDescriber } from '../../../agent/image-describer';
import type { EpisodeService } from '../../../memory/episodes/episode-service';

/** Speech to text (the port the composition root fills with the transcription client). */
export interface VoiceTranscriber {
  transcribe(audio: { readonly bytes: Buffer; readonly mime: string; readonly filename: string }): Promise<string>;
}

/** Limits of media reading (Config.media). */
export interface MediaLimits {
  /** Largest file downloaded, in bytes. */
  readonly maxFileBytes: number;
  readonly documentMaxPages: number;
  readonly documentMaxParts: number;
}

export interface TelegramMediaOptions {
  readonly limits: MediaLimits;
  readonly describer?: ImageDescriber;
  readonly transcriber?: VoiceTranscriber;
  readonly episodes?: Pick<EpisodeService, 'ingestMany' | 'normalize'>;
}
