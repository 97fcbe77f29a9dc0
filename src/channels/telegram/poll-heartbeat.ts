/**
 * The Telegram channel's polling heartbeat: proof, readable from outside the process, that the bot
 * is still receiving updates.
 *
 * The bot beats whenever the Bot API answers it successfully at start-up (getMe, deleteWebhook,
 * setMyCommands) and after every getUpdates long poll that completes successfully (with updates
 * or empty at its timeout, 30 s). The time of the last beat is kept in memory (the admin API's
 * /readyz reports it) and written to `DATA_DIR/telegram-heartbeat` as one JSON line,
 * `{"at":"<ISO time>"}`, replaced atomically (written beside it, then renamed) and at most once
 * every {@link HEARTBEAT_WRITE_INTERVAL_MS}: cheap, and never half-written for a reader.
 *
 * The image's health check (Dockerfile, docker-healthcheck.cjs) reads that file without the admin
 * token: with Telegram configured, a heartbeat older than TELEGRAM_HEARTBEAT_MAX_AGE (120 s by
 * default, four long polls) or none at all is unhealthy. When the Bot API is unreachable, the
 * token revoked or the runner stopped, no poll completes, the heartbeat goes stale, and the
 * container turns unhealthy: that is the point.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../shared/logger';
import type { PollHealth } from '../../shared/poll-health';
export type { PollHealth } from '../../shared/poll-health';

/** The file is rewritten at most this often, however often polls complete. */
export const HEARTBEAT_WRITE_INTERVAL_MS = 5_000;

export interface PollHeartbeat {
  /** Records that the Bot API just answered a poll (or a start-up call) successfully. */
  beat(): void;
  /** When it last did, if it has in this process. */
  last(): Date | undefined;
}

export interface FileHeartbeatOptions {
  /** Path of the heartbeat file (Config.telegram.heartbeat.file: DATA_DIR/telegram-heartbeat, the name docker-healthcheck.cjs reads). */
  readonly file: string;
  readonly logger: Logger;
  /** Minimum time between two writes of the file (default {@link HEARTBEAT_WRITE_INTERVAL_MS}). */
  readonly writeIntervalMs?: number;
  readonly clock?: () => Date;
}

/** The heartbeat kept in memory and in a file. A failed write is logged once and never thrown. */
export function createFileHeartbeat(options: FileHeartbeatOptions): PollHeartbeat {
  const log = options.logger.child({ component: 'telegram' });
  const clock = options.clock ?? (() => new Date());
  const interval = options.writeIntervalMs ?? HEARTBEAT_WRITE_INTERVAL_MS;
  const temporary = path.join(path.dirname(options.file), `.${path.basename(options.file)}.tmp`);
  let last: Date | undefined;
  let writtenAt = -Infinity;
  let warned = false;

  return {
    beat() {
      last = clock();
      if (last.getTime() - writtenAt < interval) return;
      try {
        // Small enough for a synchronous write; the rename makes it appear whole or not at all.
        fs.mkdirSync(path.dirname(options.file), { recursive: true });
        fs.writeFileSync(temporary, `${JSON.stringify({ at: last.toISOString() })}\n`);
        fs.renameSync(temporary, options.file);
        writtenAt = last.getTime();
        warned = false;
      } catch (error) {
        if (!warned) log.warn('could not write the polling heartbeat file; the health check will call the bot stale', { file: options.file, error });
        warned = true;
      }
    },
    last: () => last,
  };
}

/** Polling health as of `now`, for /readyz. */
export function pollHealth(heartbeat: Pick<PollHeartbeat, 'last'>, maxAgeSeconds: number, now: Date = new Date()): PollHealth {
  const last = heartbeat.last();
  if (!last) return { status: 'starting', lastPollAt: null, maxAgeSeconds };
  const fresh = now.getTime() - last.getTime() <= maxAgeSeconds * 1000;
  return { status: fresh ? 'polling' : 'stale', lastPollAt: last.toISOString(), maxAgeSeconds };
}
