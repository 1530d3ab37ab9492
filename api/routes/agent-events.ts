/**
 * The agent event log over HTTP:
 * - `POST /v1/agent/hosts/:hostId/attempts/:attemptId/events` (host credential): a host writes its
 *   driver's events for its current attempt (`{events: [{seq, event_type, payload, is_error?}]}` →
 *   `{accepted: n}`), fenced to the attempt (the contract: lib/contracts/host-api.ts).
 * - `GET /v1/agent/jobs/:jobId/events` (owner): the job's events as server-sent events, resumable
 *   with `Last-Event-ID` or `?after=<event_id>`.
 * - `GET /admin/agent/runs/:jobId/activity` (operator): event envelopes without content (one payload:
 *   api/routes/admin-event-content.ts, audited).
 * See docs/agent-event-stream.md.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint, documentRoute } from '../../lib/http/route-docs';
import type { ApiDeps } from '../deps';
import { AppError } from '../../lib/errors';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import { hostOf, ownerOf, requireHost, requireOperator, requireOwner, type AgentState, type PrincipalDeps } from '../auth/principals';
import { findOwnedJob } from '../../agent/jobs/job-store';
import { connectionSettingsOf, createEventNotifier, type EventNotifier } from '../../agent/events/event-notifier';
import { ingestHostEvents } from '../../agent/events/event-ingest';
import * as hostApi from '../../lib/contracts/host-api';
import type { ResponseOf } from '../../lib/contracts/endpoint';
import { parseEventId } from '../../agent/events/event-store';
import { streamJobEvents } from '../sse/event-stream';
import { activityQuerySchema, listActivity } from '../../agent/events/activity-view';

/** The process's notifier: `deps.events`, created on first use when the process gave none. */
function notifierOf(deps: ApiDeps): EventNotifier {
  deps.events ??= createEventNotifier({ connection: connectionSettingsOf(deps.db), log: deps.log });
  return deps.events;
}

/** The resume point of a stream: `Last-Event-ID` wins over `?after=`; `'0'` when neither is given. */
export function resumePointOf(lastEventId: string | undefined, after: string | string[] | undefined): string {
  if (lastEventId !== undefined && lastEventId !== '') {
    const id = parseEventId(lastEventId);
    if (id === undefined) throw new AppError('invalid_request', 'Last-Event-ID must be an event id (a decimal integer)', { param: 'Last-Event-ID' });
    return id;
  }
  if (after === undefined) return '0';
  const id = typeof after === 'string' ? parseEventId(after) : undefined;
  if (id === undefined) throw new AppError('invalid_request', "Invalid field 'after': must be an event id (a decimal integer)", { param: 'after' });
  return id;
}

export function agentEventsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const principals: PrincipalDeps = { db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN };

  router.post(hostApi.attemptEvents.route, requireHost(deps.db), async (ctx) => {
    const hostId = hostOf(ctx.state);
    const batch = validateBody(hostApi.attemptEvents.request, await readJsonBody(ctx.req, hostApi.MAX_INGEST_BODY_BYTES, { text: 'replace' }));
    ctx.body = (await ingestHostEvents(deps.db, { hostId, attemptId: ctx.params.attemptId ?? '', batch })) satisfies ResponseOf<typeof hostApi.attemptEvents>;
  });

  router.get('/v1/agent/jobs/:jobId/events', requireOwner(principals), async (ctx) => {
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', ownerOf(ctx.state).userId);
    const after = resumePointOf(ctx.get('last-event-id') || undefined, ctx.query.after);
    ctx.respond = false;
    await streamJobEvents({
      res: ctx.res,
      db: deps.db,
      notifier: notifierOf(deps),
      jobId: job.job_id,
      afterEventId: after,
      heartbeatMs: deps.settings.AGENT_EVENT_STREAM_HEARTBEAT_SECONDS * 1000,
      log: ctx.state.log,
    });
  });

  router.get('/admin/agent/runs/:jobId/activity', requireOperator(principals), async (ctx) => {
    const query = validateBody(activityQuerySchema, ctx.query);
    ctx.body = await listActivity(deps.db, ctx.params.jobId ?? '', query);
  });

  documentEndpoint(router, hostApi.attemptEvents);
  documentRoute(router, 'GET', '/v1/agent/jobs/:jobId/events', { produces: 'text/event-stream', summary: "A job's events as server-sent events (resumes after `Last-Event-ID` or `after`)." });
  documentRoute(router, 'GET', '/admin/agent/runs/:jobId/activity', { query: activityQuerySchema, summary: "A run's activity view." });
  return router;
}
