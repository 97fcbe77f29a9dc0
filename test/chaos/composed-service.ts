/**
 * The composed service as `npm start` builds it (src/service.ts), started in the test's process:
 * the admin API and the signed webhook channel on free loopback ports, no terminal, sleep only
 * when the test asks for it. Suites that attack it over HTTP share this start.
 */
import { PassThrough } from 'node:stream';
import { loadConfig } from '../../src/config/load-config';
import { startService, type RunningService } from '../../src/service';
import type { Logger } from '../../src/shared/logger';
import { freePort } from './chaos-support';

export interface ComposedService {
  readonly service: RunningService;
  /** `http://127.0.0.1:<API_PORT>` */
  readonly apiBase: string;
  /** `http://127.0.0.1:<WEBHOOK_PORT>` */
  readonly webhookBase: string;
}

/** Starts the service on `dataDir` with `env` on top of the defaults above (ADMIN_TOKEN, WEBHOOK_SECRET, the model...). */
export async function startComposedService(params: {
  readonly dataDir: string;
  readonly logger: Logger;
  readonly env: Record<string, string>;
}): Promise<ComposedService> {
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const config = loadConfig({
    env: {
      DATA_DIR: params.dataDir,
      TZ: 'UTC',
      API_PORT: String(apiPort),
      WEBHOOK_PORT: String(webhookPort),
      TERMINAL: 'off',
      SLEEP_ENABLED: 'false',
      LOG_FORMAT: 'json',
      ...params.env,
    },
    envFile: false,
  });
  const service = await startService(config, params.logger, { input: new PassThrough(), output: new PassThrough() });
  return { service, apiBase: `http://127.0.0.1:${apiPort}`, webhookBase: `http://127.0.0.1:${webhookPort}` };
}
