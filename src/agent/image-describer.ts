/**
 * A photo the person sent, put into words by the configured model, so what it shows can be
 * remembered, searched and forgotten like anything said: the description is stored, the picture
 * never is.
 *
 * Not every model can see. A model that refuses an image (a 400 from the provider: a text-only
 * Anthropic model, an Ollama model without vision) is remembered as blind for the rest of the run,
 * so it is not asked again with every photo; `MEDIA_VISION=off` makes it blind from the start.
 */
import { LlmError, type LanguageModel } from '../llm/language-model';
import type { Logger } from '../shared/logger';

/** What a describer says about one picture: its words, or that the model cannot see. */
export type ImageDescription = { readonly kind: 'described'; readonly text: string } | { readonly kind: 'blind' };

export interface ImageDescriber {
  /** False once the model is known not to see (or MEDIA_VISION=off): a photo is then not even downloaded. */
  canSee(): boolean;
  describe(image: { readonly bytes: Buffer; readonly mime: string; readonly caption?: string; readonly scopeId?: string }): Promise<ImageDescription>;
}

export interface ImageDescriberOptions {
  readonly model: LanguageModel;
  /** MEDIA_VISION: false means the model is never shown a picture. */
  readonly vision: boolean;
  /** The longest description kept, in characters; a longer one is cut at a word. */
  readonly maxChars: number;
  readonly logger: Logger;
}

/** What the model is asked: plain facts a memory can hold, not an art critique. */
export const DESCRIBE_IMAGE_PROMPT =
  'Describe this photo in a few plain sentences for someone\u2019s personal memory: who or what is in it, where it seems to be, ' +
  'any text you can read, and anything the person might want to remember about it. No preamble, no guesses presented as facts.';

/** Enough tokens for the longest description kept (about four characters a token), with room. */
const TOKENS_PER_CHAR = 0.4;

/** `text` cut to `max` characters at a word, marked as cut. */
export function capText(text: string, max: number): string {
  const clean = text.trim();
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}\u2026`;
}

export function createImageDescriber(options: ImageDescriberOptions): ImageDescriber {
  const log = options.logger.child({ component: 'image-describer' });
  let blind = !options.vision;
  return {
    canSee: () => !blind,
    async describe(image) {
      if (blind) return { kind: 'blind' };
      const words = image.caption ? `${DESCRIBE_IMAGE_PROMPT}\nThe person\u2019s caption: ${image.caption}` : DESCRIBE_IMAGE_PROMPT;
      try {
        const answer = await options.model.complete({
          purpose: 'describe_image',
          ...(image.scopeId && { scopeId: image.scopeId }),
          maxTokens: Math.ceil(options.maxChars * TOKENS_PER_CHAR) + 64,
          messages: [{ role: 'user', content: words, images: [{ mime: image.mime, base64: image.bytes.toString('base64') }] }],
        });
        const text = capText(answer.text, options.maxChars);
        return text === '' ? { kind: 'blind' } : { kind: 'described', text };
      } catch (error) {
        if (error instanceof LlmError && error.reason === 'bad_request') {
          // The provider refused the picture itself: this model cannot see; do not ask it again.
          blind = true;
          log.warn('the model refused an image: photos are kept by their captions from now on (set MEDIA_VISION=off to skip the attempt)', {
            model: options.model.model,
            error,
          });
          return { kind: 'blind' };
        }
        throw error;
      }
    },
  };
}
