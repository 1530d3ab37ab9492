/**
 * The Gitea adapter against a real Gitea (test/support/gitea.ts): the forge conformance suite, and
 * what only Gitea shows: the scoping of its service users' tokens (a clone token reads one
 * repository and cannot push; neither token reaches another private repository) and drafts made
 * by the work-in-progress title prefix.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GiteaForge } from '../../../activities/forge/gitea-forge';
import { forgeConformance, type ForgeHarness } from '../../support/forge-conformance';
import { createGiteaRepo, createGiteaUser, getGiteaPull, giteaApi, listGiteaPulls, testGitea } from '../../support/gitea';
import { gitWithHeader } from '../../support/git-http';

async function giteaHarness(): Promise<ForgeHarness & { other: { owner: string; name: string }; work: string }> {
  const gitea = await testGitea();
  const owner = await createGiteaUser();
  const repo = await createGiteaRepo(owner.username, undefined, { private: true });
  const other = await createGiteaRepo(owner.username, undefined, { private: true });
  const forge = new GiteaForge({ baseUrl: gitea.url, admin: gitea.admin });
  const work = await mkdtemp(join(tmpdir(), 'gitea-forge-'));
  let n = 0;
  const named = { owner: repo.owner, name: repo.name };
  return {
    forge, other, work,
    repoString: `${gitea.url}/${repo.owner}/${repo.name}`,
    repo: named,
    defaultBranch: 'main',
    async pushBranch(name) {
      await giteaApi('POST', `/repos/${repo.owner}/${repo.name}/contents/${encodeURIComponent(`change-${Date.now()}.txt`)}`, {
        content: Buffer.from('hello\n').toString('base64'), branch: 'main', new_branch: name, message: 'A change',
      });
    },
    async gitWith(token, header, access) {
      n += 1;
      const dir = join(work, `clone-${n}`);
      await gitWithHeader(work, ['clone', '-q', forge.gitUrl(named), dir], header);
      if (access === 'read') {
        await assert.rejects(gitWithHeader(dir, ['push', '-q', 'origin', 'HEAD:refs/heads/not-allowed'], header), 'a clone token must not push');
        return;
      }
      await writeFile(join(dir, 'pushed.txt'), 'pushed\n');
      await gitWithHeader(dir, ['add', 'pushed.txt']);
      await gitWithHeader(dir, ['commit', '-qm', 'Pushed with the repo token']);
      const branch = `pushed-${n}-${Date.now()}`;
      await gitWithHeader(dir, ['push', '-q', 'origin', `HEAD:refs/heads/${branch}`], header);
      await giteaApi('GET', `/repos/${repo.owner}/${repo.name}/branches/${branch}`);
    },
    async countPulls() {
      return (await listGiteaPulls(repo.owner, repo.name)).length;
    },
    against(url) {
      const hostile = new GiteaForge({ baseUrl: url, admin: gitea.admin, limits: { timeoutMs: 1000, maxBodyBytes: 1024 * 1024 } });
      return { forge: hostile, secrets: [gitea.admin.password, Buffer.from(`${gitea.admin.username}:${gitea.admin.password}`).toString('base64')] };
    },
    async close() {
      await rm(work, { recursive: true, force: true });
    },
  };
}

forgeConformance({ name: 'Gitea', create: giteaHarness });

describe('Gitea adapter: token scoping and drafts', function () {
  this.timeout(120_000);
  let h: Awaited<ReturnType<typeof giteaHarness>>;

  before(async () => {
    h = await giteaHarness();
  });
  after(async () => {
    await h.close?.();
  });

  it('gives tokens that reach no other private repository, even of the same owner', async () => {
    for (const token of [await h.forge.cloneToken(h.repo), await h.forge.repoToken(h.repo)]) {
      const header = h.forge.gitAuthHeader(token);
      await assert.rejects(gitWithHeader(h.work, ['ls-remote', h.forge.gitUrl(h.other)], header));
      await gitWithHeader(h.work, ['ls-remote', h.forge.gitUrl(h.repo)], header);
    }
  });

  it('mints tokens of restricted service users that cannot create repositories', async () => {
    const token = await h.forge.repoToken(h.repo);
    const me = await giteaApi<{ login: string; restricted: boolean }>('GET', '/user', undefined, `token ${token.token}`).catch((err: Error) => err);
    // A write:repository token has no user scope: it cannot even read its own profile.
    assert.ok(me instanceof Error && /403/.test(me.message), JSON.stringify(me));
    const made = await giteaApi('POST', '/user/repos', { name: 'escape' }, `token ${token.token}`).catch((err: Error) => err);
    assert.ok(made instanceof Error && /40[03]/.test(made.message), String(made));
  });

  it('opens a draft with the work-in-progress prefix that Gitea reports as a draft', async () => {
    const head = `agent/draft-${Date.now()}`;
    await h.pushBranch(head);
    const opened = await h.forge.openDraftPullRequest(h.repo, { head, base: 'main', title: 'Fix the parser', body: 'Body' });
    const stored = await getGiteaPull(h.repo.owner, h.repo.name, opened.number);
    assert.equal(stored.title, 'WIP: Fix the parser');
    assert.equal(stored.draft, true);
    assert.equal(stored.body, 'Body');
    assert.equal(opened.url, stored.html_url);
  });

  it('mints concurrently for a repository it has never seen (service users created once), and every token clones', async () => {
    const owner = await createGiteaUser();
    const fresh = await createGiteaRepo(owner.username, undefined, { private: true });
    const named = { owner: fresh.owner, name: fresh.name };
    const tokens = await Promise.all([h.forge.cloneToken(named), h.forge.cloneToken(named), h.forge.repoToken(named), h.forge.repoToken(named)]);
    for (const token of tokens) await gitWithHeader(h.work, ['ls-remote', h.forge.gitUrl(named)], h.forge.gitAuthHeader(token));
    const collaborators = await giteaApi<Array<{ login: string }>>('GET', `/repos/${fresh.owner}/${fresh.name}/collaborators`);
    assert.equal(collaborators.filter((c) => /^agent-[rw]-/.test(c.login)).length, 2, JSON.stringify(collaborators));
  });

  it('deletes a service user\'s ended tokens at the next mint', async () => {
    const early = new GiteaForge({ baseUrl: (await testGitea()).url, admin: (await testGitea()).admin, tokenTtlMs: 1000, now: () => Date.now() - 10_000 });
    const ended = await early.cloneToken(h.repo);
    await gitWithHeader(h.work, ['ls-remote', h.forge.gitUrl(h.repo)], h.forge.gitAuthHeader(ended));
    await h.forge.cloneToken(h.repo);
    await assert.rejects(gitWithHeader(h.work, ['ls-remote', h.forge.gitUrl(h.repo)], h.forge.gitAuthHeader(ended)), 'an ended token is deleted by the next mint');
  });

  it('says a repository that does not exist is not found', async () => {
    const missing = { owner: h.repo.owner, name: 'no-such-repository' };
    await assert.rejects(h.forge.defaultBranch(missing), (err: Error & { failure?: string }) => err.failure === 'not_found');
    await assert.rejects(h.forge.cloneToken(missing), (err: Error & { failure?: string }) => err.failure === 'not_found');
  });
});

describe('Gitea adapter: a service user of one repository', function () {
  this.timeout(60_000);
  it('is restricted and private', async () => {
    const gitea = await testGitea();
    const owner = await createGiteaUser();
    const repo = await createGiteaRepo(owner.username);
    const forge = new GiteaForge({ baseUrl: gitea.url, admin: gitea.admin, serviceUserPrefix: 'svc' });
    await forge.cloneToken({ owner: repo.owner, name: repo.name });
    const collaborators = await giteaApi<Array<{ login: string }>>('GET', `/repos/${repo.owner}/${repo.name}/collaborators`);
    const reader = collaborators.find((c) => c.login.startsWith('svc-r-'));
    assert.ok(reader, JSON.stringify(collaborators));
    const user = await giteaApi<{ restricted: boolean; visibility: string }>('GET', `/users/${reader.login}`);
    assert.equal(user.visibility, 'private');
    assert.equal(user.restricted, true);
    const permission = await giteaApi<{ permission: string }>('GET', `/repos/${repo.owner}/${repo.name}/collaborators/${reader.login}/permission`);
    assert.equal(permission.permission, 'read');
  });
});
