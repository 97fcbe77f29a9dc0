import type { Core } from '../../src/core';

/** The domain services a channel is built from, by name, taken from a test's core. */
export function channelServices(core: Core) {
  const { directory, catalog, digestBook, forget, archive, scheduler } = core;
  return { directory, catalog, digestBook, forget, archive, scheduler };
}
