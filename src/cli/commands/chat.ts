/**
 * `chat [--scope KEY] [--name NAME]`: the terminal channel (src/channels/terminal/) on
 * stdin/stdout, with the agent answering, without starting the rest of the service. The same
 * conversation and commands as `npm start` on a terminal: `/end` ends the conversation (a short
 * memory of it is recorded), `/quit` (or end of input) exits; an open conversation continues at
 * the next `chat` with the same scope. A person's conversation has no `--json` form. The screen
 * shows the conversation only: log lines go to the log file (DATA_DIR/nocturne.log or LOG_FILE).
 */
import os from 'node:os';
import { createAgent } from '../../agent/agent';
import { agentServices, channelServices } from '../../service';
import type { ConversationHandler } from '../../channels/conversation-handler';
import path from 'node:path';
import { normalizeScopeKey } from '../../memory/scopes/scope-key';
import { createTerminalChannel } from '../../channels/terminal/terminal-channel';
import { ValidationError } from '../../shared/errors';
import type { CommandRunner } from '../command';

export const chatCommand: CommandRunner = {
  async run(ctx) {
    if (ctx.json)
      throw new ValidationError(
        'chat is a conversation on the terminal and has no --json output; the admin API and the webhook channel are the machine interfaces',
        { code: 'cli.usage' },
      );
    const authorName = (ctx.values.name as string | undefined)?.trim() || os.userInfo().username;
    // Checked before the conversation opens: a bad key is bad usage (exit 2), not a failed first line.
    const scopeKey = normalizeScopeKey((ctx.values.scope as string | undefined)?.trim() || `terminal:${authorName}`, 'cli.usage');
    const core = await ctx.core();
    const agent = createAgent(agentServices(core));
    const handler: ConversationHandler = {
      reply: async (message) => (await agent.handle(message)).text,
      observe: (message) => agent.observe(message),
      end: async (key) => {
        await agent.endConversation(key, 'explicit');
      },
    };
    // Memories and turns get their vectors while the conversation goes on (as under npm start).
    core.embeddingWorker.start();
    const sweeper = agent.startIdleSweep();
    const terminal = createTerminalChannel({
      ...channelServices(core),
      handler,
      input: process.stdin,
      output: ctx.out,
      scopeKey,
      authorName,
      logger: ctx.logger,
      defaultTimeZone: ctx.config.timeZone,
      exportDir: path.join(ctx.config.dataDir, 'exports'),
      // `/web`: the link opens the page on the service's listener (served when ADMIN_TOKEN is set there).
      web: { sessions: core.webSessions, publicUrl: ctx.config.web.publicUrl },
      // Reminders set here are printed when due while the conversation is open (late ones at its start).
      reminderDelivery: { reminders: core.reminders, intervalMs: ctx.config.reminders.checkMs, lateAfterMs: ctx.config.reminders.lateAfterMs },
    });
    try {
      await terminal.run();
    } finally {
      await terminal.stop();
      await sweeper.stop();
    }
    return 0;
  },
};
