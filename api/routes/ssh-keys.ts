/**
 * Owner SSH (docs/ssh.md): `/v1/agent/ssh-keys` registers, lists and deletes the owner's SSH
 * public keys, and `GET /v1/agent/jobs/:jobId/ssh` tells the owner how to reach a chat's sandbox.
 */
import type Router from '@koa/router';
import { createRouter } from '../../lib/http/route-access';
import { documentRoute } from '../../lib/http/route-docs';
import { readJsonBody, validateBody } from '../../lib/http/json-body';
import type { ApiDeps } from '../deps';
import { ownerOf, requireOwner, type AgentState } from '../auth/principals';
import { addSshKey, deleteSshKey, listSshKeys, sshKeyBodySchema } from '../../agent/ssh/ssh-keys';
import { sshAccessView } from '../../agent/ssh/ssh-access-view';
import { findOwnedJob } from '../../agent/jobs/job-store';

export function sshKeysRouter(deps: ApiDeps): Router<AgentState> {
  const router = createRouter<AgentState>({ prefix: '/v1/agent' });
  const owner = requireOwner({ db: deps.db, tokens: deps.tokens, adminToken: deps.settings.ADMIN_TOKEN });
  router.get('/ssh-keys', owner, async (ctx) => {
    ctx.body = await listSshKeys(deps.db, ownerOf(ctx.state).userId);
  });
  router.post('/ssh-keys', owner, async (ctx) => {
    const body = validateBody(sshKeyBodySchema, await readJsonBody(ctx.req, 32 * 1024));
    ctx.status = 201;
    ctx.body = await addSshKey(deps.db, ownerOf(ctx.state).userId, body);
  });
  router.delete('/ssh-keys/:keyId', owner, async (ctx) => {
    ctx.body = await deleteSshKey(deps.db, ownerOf(ctx.state).userId, ctx.params.keyId ?? '');
  });
  router.get('/jobs/:jobId/ssh', owner, async (ctx) => {
    const job = await findOwnedJob(deps.db, ctx.params.jobId ?? '', ownerOf(ctx.state).userId);
    ctx.body = await sshAccessView(deps.db, job);
  });
  documentRoute(router, 'GET', '/ssh-keys', { summary: "The owner's SSH public keys (for SSH into their chats' sandboxes)." });
  documentRoute(router, 'POST', '/ssh-keys', {
    body: sshKeyBodySchema, success: 201, statuses: [409],
    summary: 'Registers an SSH public key: Ed25519, ECDSA or RSA of at least 3072 bits, at most 10 per owner.',
  });
  documentRoute(router, 'DELETE', '/ssh-keys/:keyId', { statuses: [404], summary: 'Deletes one of the owner\'s SSH keys.' });
  documentRoute(router, 'GET', '/jobs/:jobId/ssh', { statuses: [404], summary: 'How to reach the chat\'s sandbox over SSH: the ssh command line, or why it is not available.' });
  return router;
}
