/**
 * A scope's settings on the admin API: its digest (time, on/off), time zone, and the scope
 * controls (capped mode, sleep window, daily budgets), read and changed in one document.
 */
import type { DigestSchedule } from '../memory/scopes/digest-schedule';
import { checkControlsChange, parseSleepWindow, scopeControlsJson, type ScopeControlsChange, type ScopeControlsView } from '../memory/scopes/scope-controls';
import type { ApiApp } from './api-app';
import type { ApiOptions } from './api-options';
import { errorResponses, settingsResponse } from './response-schemas';
import { scopeParams, settingsBody } from './schemas';

/** The services the settings routes use. */
export type SettingsRouteDeps = Pick<ApiOptions, 'directory' | 'digestSchedule' | 'scopeControls'>;

/** A scope's settings as the settings routes answer them: the digest schedule and the scope controls. */
function settingsAnswer(s: DigestSchedule, c: ScopeControlsView) {
  return {
    ...scopeControlsJson(c),
    scope: s.scopeKey,
    id: s.scopeId,
    digestTime: s.time,
    digestTimeIsDefault: s.timeIsDefault,
    digestEnabled: s.enabled,
    timezone: s.timeZone,
    timezoneIsDefault: s.timeZoneIsDefault,
    nextDigest: s.next?.toISOString() ?? null,
    digestDelivered: s.delivered,
  };
}

export function registerSettingsRoutes(app: ApiApp, deps: SettingsRouteDeps): void {
  const { directory, digestSchedule, scopeControls } = deps;
  const response = { 200: settingsResponse, ...errorResponses };

  app.get('/scopes/:id/settings', { schema: { params: scopeParams, response } }, async (request) => {
    const scope = await directory.require(request.params.id);
    return settingsAnswer(await digestSchedule.get(scope.id), await scopeControls.get(scope.id));
  });

  // Validated (the zone against the IANA database, the window and budgets by the scope
  // controls), audited (`settings` on the scope), read by the next turn and by the scheduler at
  // its next tick: no restart. Every field is checked before anything is written.
  app.patch('/scopes/:id/settings', { schema: { params: scopeParams, body: settingsBody, response } }, async (request) => {
    const body = request.body;
    const scope = await directory.require(request.params.id);
    const controls: ScopeControlsChange = {
      ...(body.cappedMode !== undefined && { memoryCap: body.cappedMode ? (body.memoryCap ?? 'on') : null }),
      ...(body.cappedMode === undefined && body.memoryCap !== undefined && { memoryCap: body.memoryCap }),
      ...(body.sleepWindow !== undefined && { sleepWindow: body.sleepWindow === null ? null : parseSleepWindow(body.sleepWindow) }),
      ...(body.sleepDailyTokenBudget !== undefined && { sleepDailyTokenBudget: body.sleepDailyTokenBudget }),
      ...(body.replyDailyBudget !== undefined && { replyDailyBudget: body.replyDailyBudget }),
    };
    checkControlsChange(controls);
    const reason = { reason: 'changed through the admin API' };
    const schedule = await digestSchedule.set(scope.id, { time: body.digestTime, enabled: body.digestEnabled, timeZone: body.timezone }, reason);
    const changed = Object.keys(controls).length > 0 ? await scopeControls.set(scope.id, controls, reason) : await scopeControls.get(scope.id);
    return settingsAnswer(schedule, changed);
  });
}
