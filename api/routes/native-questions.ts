/**
 * Native questions over HTTP (agent/questions/native-questions.ts; docs/agent-drivers.md "Native
 * questions"):
 * - host (credential): `GET /v1/agent/hosts/:hostId/attempts/:attemptId/questions/:requestId` (the
 *   owner's answer, polled) and `POST …/expire` (the host stops waiting), fenced to the attempt.
 * - owner: `GET /v1/agent/jobs/:jobId/questions` (`?pending=true`: only those waiting) and the
 *   answer route `POST /v1/agent/jobs/:jobId/attempts/:attemptId/questions/:requestId/answer`
 *   (`{answers: {<question id>: [text, …]}}` or `{decline: true, message?}`).
 */
import type Router from '@koa/router';
import { z } from 'zod';
import { createRouter } from '../../lib/http/route-access';
import { documentEndpoint, documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { hostOf, ownerOf, requireHost, requireOwner, type AgentState } from '../auth/principals';
import { findOwnedJob } from '../../agent/jobs/job-store';
import { answerQuestion, answerSchema, hostQuestionState, listJobQuestions } from '../../agent/questions/native-questions';
import * as hostApi from '../../lib/contracts/host-api';
import type { ResponseOf } from '../../lib/contracts/endpoint';

const ANSWER_BODY_LIMIT = 256 * 1024;
const listQuery = z.object({ pending: z.enum(['true', 'false']).optional() }).strict();

export function nativeQuestionsRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>();
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });

  router.get(hostApi.attemptQuestion.route, requireHost(deps.db), async (ctx) => {
    ctx.set('cache-control', 'no-store');
    ctx.body = (await hostQuestionState(deps.db, {
      hostId: hostOf(ctx.state), attemptId: ctx.params.attemptId ?? '', requestId: ctx.params.requestId ?? '', expire: false,
    })) satisfies ResponseOf<typeof hostApi.attemptQuestion>;
  });

  router.post(hostApi.attemptQuestionExpire.route, requireHost(deps.db), async (ctx) => {
    validateBody(hostApi.attemptQuestionExpire.request, await readJsonBody(ctx.req, 1024));
    ctx.body = (await hostQuestionState(deps.db, {
      hostId: hostOf(ctx.state), attemptId: ctx.params.attemptId ?? '', requestId: ctx.params.requestId ?? '', expire: true,
    })) satisfies ResponseOf<typeof hostApi.attemptQuestionExpire>;
  });

  router.get('/v1/agent/jobs/:jobId/questions', owner, async (ctx) => {
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', ownerOf(ctx.state).userId);
    const query = validateBody(listQuery, ctx.query);
    ctx.set('cache-control', 'no-store');
    ctx.body = { questions: await listJobQuestions(deps.db, job.job_id, { pending: query.pending === 'true' }) };
  });

  router.post('/v1/agent/jobs/:jobId/attempts/:attemptId/questions/:requestId/answer', owner, async (ctx) => {
    const ownerId = ownerOf(ctx.state).userId;
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', ownerId);
    const body = validateBody(answerSchema, await readJsonBody(ctx.req, ANSWER_BODY_LIMIT));
    ctx.body = await answerQuestion(deps.db, { jobId: job.job_id, attemptId: ctx.params.attemptId ?? '', requestId: ctx.params.requestId ?? '', ownerId, body });
  });

  documentEndpoint(router, hostApi.attemptQuestion);
  documentEndpoint(router, hostApi.attemptQuestionExpire);
  documentRoute(router, 'GET', '/v1/agent/jobs/:jobId/questions', { query: listQuery, summary: "A job's questions to its owner." });
  documentRoute(router, 'POST', '/v1/agent/jobs/:jobId/attempts/:attemptId/questions/:requestId/answer', { body: answerSchema, statuses: [409], summary: 'Answers a question.' });
  return router;
}
