/**
 * Owners' chat routes (docs/agent-api.md): create a job, list jobs (also as `/conversations` and
 * `/sessions`), list them grouped by repository (`/projects`), read one, append a turn, cancel a turn, fork at a turn. Owners see only their own jobs.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { z } from 'zod';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { sourceControlAppOf } from '../process-services';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { ChatDelivery } from '../../agent/jobs/chat-delivery';
import { addTurn, addTurnSchema, cancelTurn, createJob, createJobSchema } from '../../agent/jobs/job-commands';
import { findOwnedJob } from '../../agent/jobs/job-store';
import { checkJobModel } from '../../agent/jobs/job-model';
import { forkChat, forkSchema } from '../../agent/jobs/fork';
import { jobView, listJobs, listQuerySchema } from '../../agent/jobs/job-views';
import { listProjects, projectsQuerySchema } from '../../agent/jobs/job-projects';
import { parseAllowlist } from '../../agent/jobs/entitlement';
import { assertRepoEntitledFor } from '../../agent/source/repo-entitlement';
import { sourceControlFromSettings } from '../../agent/source/source-control';
import { chooseExecutionProfile } from '../../agent/sandboxes/execution-profile';

const BODY_LIMIT = 256 * 1024;
const seqParam = z.coerce.number().int().min(1).max(2_147_483_647);

export function jobsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>({ prefix: '/v1/agent' });
  const delivery = new ChatDelivery(deps.temporal, deps.settings, deps.log);
  const sourceControl = sourceControlAppOf(deps);
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  const sc = sourceControlFromSettings(deps.settings);

  router.post('/jobs', owner, async (ctx) => {
    const owner = ownerOf(ctx.state);
    const body = validateBody(createJobSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    if (body.repo !== null) {
      sourceControl.assertAvailable();
      // The allowlist is read per request: it is an admin setting (docs/agent-admin.md "Settings").
      // Otherwise a linked account's grant entitles, checked with the provider when due (docs/source-control.md).
      await assertRepoEntitledFor({
        db: deps.db, sc, log: ctx.state.log, allowlist: parseAllowlist(deps.settings.AGENT_REPO_ALLOWLIST),
        grantsMaxAgeSeconds: deps.settings.AGENT_SOURCE_CONTROL_GRANTS_MAX_AGE_SECONDS,
      }, owner.userId, body.repo);
    }
    // Before anything is written: 404/403 for a model the owner cannot run (agent/jobs/job-model.ts).
    const model = await checkJobModel({ grants: deps.grants, userId: owner.userId, model: body.model, log: ctx.state.log });
    const executionProfile = chooseExecutionProfile({
      repo: body.repo, deploymentDefault: deps.settings.AGENT_DEFAULT_EXECUTION_PROFILE,
      trustedRepositories: parseAllowlist(deps.settings.AGENT_TRUSTED_REPOSITORIES),
      ...(body.execution_profile ? { requested: body.execution_profile } : {}),
    });
    const { job, turn } = await createJob(deps.db, { ownerId: owner.userId, body: { ...body, model }, defaultDriver: deps.settings.AGENT_DRIVER, executionProfile });
    await delivery.submitTurn({ jobId: job.job_id, ownerId: owner.userId, executionProfile: job.execution_profile }, { turnId: turn.turn_id, seq: turn.seq });
    ctx.status = 201;
    ctx.body = { job_id: job.job_id, title: job.title, turn };
  });

  for (const path of ['/jobs', '/conversations', '/sessions']) {
    router.get(path, owner, async (ctx) => {
      const query = validateBody(listQuerySchema, ctx.query);
      ctx.body = await listJobs(deps.db, ownerOf(ctx.state).userId, query);
    });
  }

  router.get('/projects', owner, async (ctx) => {
    validateBody(projectsQuerySchema, ctx.query);
    ctx.body = await listProjects(deps.db, ownerOf(ctx.state).userId);
  });

  router.get('/jobs/:jobId', owner, async (ctx) => {
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', ownerOf(ctx.state).userId);
    ctx.body = await jobView(deps.db, job);
  });

  router.post('/jobs/:jobId/turns', owner, async (ctx) => {
    const owner = ownerOf(ctx.state);
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', owner.userId);
    const body = validateBody(addTurnSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const turn = await addTurn(deps.db, job, body.prompt);
    await delivery.submitTurn({ jobId: job.job_id, ownerId: owner.userId, executionProfile: job.execution_profile }, { turnId: turn.turn_id, seq: turn.seq });
    ctx.status = 201;
    ctx.body = turn;
  });

  router.post('/jobs/:jobId/turns/:seq/cancel', owner, async (ctx) => {
    const owner = ownerOf(ctx.state);
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', owner.userId);
    const seq = validateBody(seqParam, ctx.params.seq);
    const outcome = await cancelTurn(deps.db, job, seq);
    const chat = { jobId: job.job_id, ownerId: owner.userId, executionProfile: job.execution_profile };
    if (outcome.state === 'running') await delivery.cancelRunning(chat, seq);
    else await delivery.wake(chat);
    ctx.body = outcome;
  });

  // A fork of the chat at a completed turn, in the same sandbox group (docs/sandboxes.md "Forks").
  router.post('/jobs/:jobId/fork', owner, async (ctx) => {
    const owner = ownerOf(ctx.state);
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', owner.userId);
    const body = validateBody(forkSchema, await readJsonBody(ctx.req, BODY_LIMIT));
    const fork = await forkChat(deps.db, job, body, { sessionsPerSandbox: deps.agentSettings.current.sessions_per_sandbox });
    if (fork.turn) {
      await delivery.submitTurn({ jobId: fork.job.job_id, ownerId: owner.userId, executionProfile: fork.job.execution_profile }, { turnId: fork.turn.turn_id, seq: fork.turn.seq });
    }
    ctx.status = 201;
    ctx.body = {
      job_id: fork.job.job_id, title: fork.job.title, forked_from_job_id: fork.job.forked_from_job_id,
      anchor_seq: fork.job.fork_anchor_seq, anchor_turn_id: fork.job.fork_anchor_turn_id, historical: fork.job.fork_historical, turn: fork.turn,
    };
  });

  documentRoute(router, 'POST', '/jobs', { body: createJobSchema, success: 201, statuses: [503], summary: 'Creates a job with its first turn.' });
  for (const path of ['/jobs', '/conversations', '/sessions']) documentRoute(router, 'GET', path, { query: listQuerySchema, summary: "The owner's jobs." });
  documentRoute(router, 'GET', '/projects', { query: projectsQuerySchema, summary: "The owner's chats grouped by repository; temporary chats under repo null." });
  documentRoute(router, 'POST', '/jobs/:jobId/turns', { body: addTurnSchema, success: 201, statuses: [409], summary: 'Appends a turn.' });
  documentRoute(router, 'POST', '/jobs/:jobId/fork', {
    body: forkSchema, success: 201, statuses: [409],
    summary: 'Forks the chat at a completed turn into a new chat sharing its sandbox (docs/sandboxes.md "Forks").',
  });
  documentRoute(router, 'POST', '/jobs/:jobId/turns/:seq/cancel', { noBody: true, statuses: [409], summary: 'Cancels a turn.' });
  return router;
}
