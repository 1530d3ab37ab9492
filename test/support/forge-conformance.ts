/**
 * The forge seam's contract (activities/forge/forge.ts, docs/forges.md) as one suite every adapter
 * runs: naming a job's repository and its git URL, tokens that work for git with `gitAuthHeader`,
 * the default branch, the idempotent find-then-open of a draft pull request, and hostile answers
 * (oversized, malformed, wrongly shaped, bad text, errors echoing the credential, stalls,
 * redirects) that end in a clean `ForgeError` which never holds a credential.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ForgeError, type Forge, type ForgeRepo, type ForgeToken } from '../../activities/forge/forge';

export interface ForgeHarness {
  forge: Forge;
  /** A job's `repo` string this forge serves, and what it names. */
  repoString: string;
  repo: ForgeRepo;
  defaultBranch: string;
  /** Makes branch `name` (one commit ahead of the default branch) on the forge, for a pull request's head. */
  pushBranch(name: string): Promise<void>;
  /** Proves git over HTTP with `header` (from `gitAuthHeader(token)`) reads, and for `write` pushes, as the token allows. */
  gitWith(token: ForgeToken, header: string, access: 'read' | 'write'): Promise<void>;
  /** How many pull requests the forge holds for the repository (open and closed). */
  countPulls(): Promise<number>;
  /** The same adapter pointed at `url` (a hostile loopback server), with a short deadline; and the secrets it sends. */
  against(url: string): { forge: Forge; secrets: string[] };
  close?(): Promise<void>;
}

export interface ForgeTarget {
  name: string;
  create(): Promise<ForgeHarness>;
}

interface Hostile { status: number; body: string | Buffer; contentType?: string; stall?: boolean; location?: string }

/** A loopback server answering every request with `answer` (the Authorization header may be echoed with `{auth}`). */
async function hostileServer(answer: Hostile): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (answer.stall) return; // never answers: the adapter's deadline must cut it
    const body = typeof answer.body === 'string' ? answer.body.replace('{auth}', req.headers.authorization ?? '') : answer.body;
    res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json', ...(answer.location ? { location: answer.location } : {}) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const HOSTILE: Array<{ what: string; answer: Hostile; failure: ForgeError['failure'] }> = [
  { what: 'an oversized answer', answer: { status: 200, body: Buffer.alloc(3 * 1024 * 1024, 0x20) }, failure: 'bad_answer' },
  { what: 'an answer that is not JSON', answer: { status: 200, body: '{"default_branch": "main", "id": 1,' }, failure: 'bad_answer' },
  { what: 'a wrongly shaped answer', answer: { status: 200, body: '{"id": "one", "default_branch": 7, "token": 1}' }, failure: 'bad_answer' },
  { what: 'an answer with a NUL in its text', answer: { status: 200, body: '{"id": 1, "default_branch": "ma\\u0000in"}' }, failure: 'bad_answer' },
  { what: 'an answer nesting too deep', answer: { status: 200, body: `${'['.repeat(5000)}${']'.repeat(5000)}` }, failure: 'bad_answer' },
  { what: 'a 500 echoing the credential', answer: { status: 500, body: '{"message": "internal error for {auth}"}' }, failure: 'unavailable' },
  { what: 'a 401 echoing the credential', answer: { status: 401, body: '{"message": "bad credentials {auth}"}' }, failure: 'refused' },
  { what: 'a redirect elsewhere', answer: { status: 302, body: '', location: 'http://127.0.0.1:9/steal' }, failure: 'bad_answer' },
  { what: 'a stalled answer', answer: { status: 200, body: '', stall: true }, failure: 'unavailable' },
];

/** Registers the suite for `target`. */
export function forgeConformance(target: ForgeTarget): void {
  describe(`forge conformance: ${target.name}`, function () {
    this.timeout(120_000);
    let h: ForgeHarness;

    before(async () => {
      h = await target.create();
    });
    after(async () => {
      await h?.close?.();
    });

    it('reads a job repository string as its repository and gives a credential-free git URL that reads back the same', () => {
      assert.deepEqual(h.forge.repoOf(h.repoString), h.repo);
      assert.deepEqual(h.forge.repoOf(`${h.repoString}.git`), h.repo);
      const gitUrl = h.forge.gitUrl(h.repo);
      assert.deepEqual(h.forge.repoOf(gitUrl), h.repo);
      const parsed = new URL(gitUrl);
      assert.equal(parsed.username + parsed.password, '');
      for (const other of [
        'https://elsewhere.example/owner/name', `${h.repoString}/extra`, `${h.repoString}?x=1`, 'not a url',
        h.repoString.replace('://', '://user:pw@'), h.repoString.replace(`/${h.repo.owner}/`, '/../'),
      ]) {
        assert.equal(h.forge.repoOf(other), undefined, other);
      }
    });

    it('mints a clone token that reads over git with gitAuthHeader and ends within about an hour', async () => {
      const token = await h.forge.cloneToken(h.repo);
      assert.ok(token.expiresAt.getTime() > Date.now() && token.expiresAt.getTime() <= Date.now() + 3700_000, token.expiresAt.toISOString());
      await h.gitWith(token, h.forge.gitAuthHeader(token), 'read');
    });

    it('mints a repo token that pushes over git with gitAuthHeader', async () => {
      const token = await h.forge.repoToken(h.repo);
      assert.ok(token.expiresAt.getTime() > Date.now() && token.expiresAt.getTime() <= Date.now() + 3700_000);
      await h.gitWith(token, h.forge.gitAuthHeader(token), 'write');
    });

    it('reports the default branch', async () => {
      assert.equal(await h.forge.defaultBranch(h.repo), h.defaultBranch);
    });

    it('finds no pull request, opens a draft, finds it again, and opening again returns the same one', async () => {
      const head = `agent/conformance-${Date.now()}`;
      await h.pushBranch(head);
      assert.equal(await h.forge.findPullRequest(h.repo, head), undefined);
      const before = await h.countPulls();
      const opened = await h.forge.openDraftPullRequest(h.repo, { head, base: h.defaultBranch, title: 'Add the greeting', body: 'Made by a turn.' });
      assert.deepEqual({ draft: opened.draft, state: opened.state, head: opened.head, base: opened.base }, { draft: true, state: 'open', head, base: h.defaultBranch });
      assert.match(opened.url, /^https?:\/\//);
      const found = await h.forge.findPullRequest(h.repo, head);
      assert.deepEqual(found, opened);
      const again = await h.forge.openDraftPullRequest(h.repo, { head, base: h.defaultBranch, title: 'Add the greeting', body: 'Made by a turn.' });
      assert.equal(again.number, opened.number);
      assert.equal(await h.countPulls(), before + 1);
    });

    it('refuses branch names that are not branch names before any call', async () => {
      for (const head of ['', '-x', 'a..b', 'a b', 'x\u0000y', 'a/../b']) {
        await assert.rejects(h.forge.findPullRequest(h.repo, head), (err: unknown) => err instanceof ForgeError && err.failure === 'refused', JSON.stringify(head));
      }
    });

    for (const c of HOSTILE) {
      it(`turns ${c.what} into a clean ${c.failure} error without the credential`, async () => {
        const server = await hostileServer(c.answer);
        try {
          const { forge, secrets } = h.against(server.url);
          for (const call of [() => forge.defaultBranch(h.repo), () => forge.cloneToken(h.repo)]) {
            const err = await call().then(() => assert.fail('a hostile answer was accepted'), (e: unknown) => e);
            assert.ok(err instanceof ForgeError, `not a ForgeError: ${String(err)}`);
            assert.equal(err.failure, c.failure, err.message);
            for (const secret of secrets) assert.ok(!err.message.includes(secret), `the message holds a credential: ${err.message}`);
            assert.ok(err.message.length < 600);
          }
        } finally {
          await server.close();
        }
      });
    }
  });
}
