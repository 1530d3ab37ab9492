/**
 * The GitHub adapter at its wire, against the loopback server of the documented subset
 * (test/support/loopback-github.ts, docs/forges.md "The GitHub wire contract"): the forge conformance
 * suite, and what the wire shows: a verified app JWT, installation tokens scoped to the one
 * repository and to exactly the permissions of their use, `draft: true` on the wire, and a clean
 * refusal while the app cannot be loaded.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForgeError } from '../../../activities/forge/forge';
import { GitHubForge } from '../../../activities/forge/github-forge';
import { forgeConformance, type ForgeHarness } from '../../support/forge-conformance';
import { gitWithHeader } from '../../support/git-http';
import { startLoopbackGithub, type LoopbackGithub } from '../../support/loopback-github';

const APP_ID = '424242';
/** The constant first part of every app JWT (`{"alg":"RS256","typ":"JWT"}`): never in an error message. */
const JWT_HEAD = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');

async function githubHarness(): Promise<ForgeHarness & { wire: LoopbackGithub; forge: GitHubForge }> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const wire = await startLoopbackGithub({
    app: { appId: APP_ID, publicKey },
    repos: [
      { owner: 'octo', name: 'widgets', defaultBranch: 'trunk', installationId: 77, permissions: { contents: 'write', pull_requests: 'write', metadata: 'read' } },
      { owner: 'octo', name: 'secrets', defaultBranch: 'main', installationId: 77, permissions: { contents: 'write', pull_requests: 'write', metadata: 'read' } },
    ],
  });
  const app = () => ({ appId: APP_ID, key: privateKey });
  const forge = new GitHubForge({ apiUrl: wire.url, webUrl: wire.url, app });
  const work = await mkdtemp(join(tmpdir(), 'github-wire-'));
  return {
    forge, wire,
    repoString: `${wire.url}/octo/widgets`,
    repo: { owner: 'octo', name: 'widgets' },
    defaultBranch: 'trunk',
    pushBranch: () => Promise.resolve(),
    async gitWith(token, header, access) {
      const url = forge.gitUrl({ owner: 'octo', name: 'widgets' });
      // The wire refuses git itself; what counts is the header git sent and the token's scope.
      await assert.rejects(gitWithHeader(work, ['ls-remote', url], header));
      const seen = wire.requests.filter((r) => r.path.startsWith('/octo/widgets.git/info/refs')).at(-1);
      assert.equal(seen?.authorization, header);
      assert.equal(header, `Basic ${Buffer.from(`x-access-token:${token.token}`).toString('base64')}`);
      const minted = wire.tokens.find((t) => t.token === token.token);
      assert.deepEqual(minted?.repositories, ['widgets']);
      assert.deepEqual(minted?.permissions, access === 'read' ? { contents: 'read' } : { contents: 'write', pull_requests: 'write' });
    },
    countPulls: () => Promise.resolve(wire.pulls.get('octo/widgets')?.length ?? 0),
    against(url) {
      const hostile = new GitHubForge({ apiUrl: url, webUrl: url, app, limits: { timeoutMs: 1000, maxBodyBytes: 1024 * 1024 } });
      return { forge: hostile, secrets: [JWT_HEAD] };
    },
    async close() {
      await wire.close();
      await rm(work, { recursive: true, force: true });
    },
  };
}

forgeConformance({ name: 'GitHub (wire)', create: githubHarness });

describe('GitHub adapter at the wire', function () {
  this.timeout(60_000);
  let h: Awaited<ReturnType<typeof githubHarness>>;

  before(async () => {
    h = await githubHarness();
  });
  after(async () => {
    await h.close?.();
  });

  it('signs the app JWT (RS256, iat 60 s back, exp within 10 minutes) and mints one-repository tokens with it', async () => {
    const before = Math.floor(Date.now() / 1000);
    const jwt = h.forge.appJwt();
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as { iat: number; exp: number; iss: string };
    assert.equal(claims.iss, APP_ID);
    assert.ok(claims.iat <= before - 59 && claims.iat >= before - 61, String(claims.iat - before));
    assert.ok(claims.exp - claims.iat <= 600);
    await h.forge.cloneToken(h.repo);
    const minting = h.wire.requests.filter((r) => r.path === '/app/installations/77/access_tokens').at(-1);
    assert.deepEqual(minting?.body, { repositories: ['widgets'], permissions: { contents: 'read' } });
    assert.match(minting?.authorization ?? '', /^bearer ey/i);
  });

  it('gives a repo token that the wire refuses for another repository of the same installation', async () => {
    const token = await h.forge.repoToken(h.repo);
    const other = await fetch(`${h.wire.url}/repos/octo/secrets`, { headers: { authorization: `token ${token.token}` } });
    assert.equal(other.status, 404);
    const own = await fetch(`${h.wire.url}/repos/octo/widgets`, { headers: { authorization: `token ${token.token}` } });
    assert.equal(own.status, 200);
  });

  it('sends draft: true when it opens a pull request', async () => {
    await h.forge.openDraftPullRequest(h.repo, { head: 'agent/wire-draft', base: 'trunk', title: 'T', body: 'B' });
    const sent = h.wire.requests.filter((r) => r.method === 'POST' && r.path === '/repos/octo/widgets/pulls').at(-1);
    assert.deepEqual(sent?.body, { head: 'agent/wire-draft', base: 'trunk', title: 'T', body: 'B', draft: true });
  });

  it('says a repository the app is not installed on is not found', async () => {
    await assert.rejects(h.forge.cloneToken({ owner: 'octo', name: 'elsewhere' }), (err: unknown) => err instanceof ForgeError && err.failure === 'not_found');
  });

  it('refuses cleanly while the app cannot be loaded', async () => {
    const forge = new GitHubForge({ apiUrl: h.wire.url, webUrl: h.wire.url, app: () => { throw new Error('ENOENT'); } });
    const calls = h.wire.requests.length;
    await assert.rejects(forge.cloneToken(h.repo), (err: unknown) => err instanceof ForgeError && err.failure === 'unavailable');
    assert.equal(h.wire.requests.length, calls, 'nothing reaches the forge without the app');
  });
});
