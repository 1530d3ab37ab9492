/**
 * The forge seam's pure rules (activities/forge/repo-url.ts, forge-http.ts; docs/forges.md): which
 * URLs name a forge's repository (a base URL with a sub-path too), which may carry a credential,
 * which branch names a call may carry, how a forge's HTTP status maps to a failure, and that an
 * excerpt of a forge's text masks token-like runs.
 */
import assert from 'node:assert/strict';
import { failureOfStatus, safeExcerpt } from '../../../../activities/forge/forge-http';
import { baseHref, branchNameOk, forgeBaseUrl, repoFromUrl, transportAllowed } from '../../../../activities/forge/repo-url';

describe('forge naming rules', () => {
  it('reads repositories under a base URL with a sub-path, and nothing outside it', () => {
    const base = forgeBaseUrl('https://git.example.com/gitea/', 'X');
    assert.equal(baseHref(base), 'https://git.example.com/gitea');
    assert.deepEqual(repoFromUrl('https://git.example.com/gitea/team/app.git', base), { owner: 'team', name: 'app' });
    assert.deepEqual(repoFromUrl('https://git.example.com/gitea/team/app/', base), { owner: 'team', name: 'app' });
    for (const other of ['https://git.example.com/team/app', 'https://git.example.com/giteax/team/app', 'http://git.example.com/gitea/team/app',
      'https://git.example.com/gitea/team', 'https://git.example.com/gitea/team/..', 'https://git.example.com/gitea/te%20am/app']) {
      assert.equal(repoFromUrl(other, base), undefined, other);
    }
  });

  it('lets a credential travel over https, or plain http to this machine only', () => {
    assert.equal(transportAllowed(new URL('https://git.example.com/')), true);
    assert.equal(transportAllowed(new URL('http://127.0.0.1:3000/')), true);
    assert.equal(transportAllowed(new URL('http://localhost/')), true);
    assert.equal(transportAllowed(new URL('http://[::1]:80/')), true);
    for (const url of ['http://git.example.com/', 'http://10.0.0.1/', 'http://127.0.0.1.example.com/', 'ftp://127.0.0.1/']) assert.equal(transportAllowed(new URL(url)), false, url);
    assert.throws(() => forgeBaseUrl('http://git.example.com', 'AGENT_GITEA_URL'), /AGENT_GITEA_URL/);
    assert.throws(() => forgeBaseUrl('https://u:p@git.example.com', 'AGENT_GITEA_URL'), /credentials/);
  });

  it('accepts branch names git accepts and refuses the rest', () => {
    for (const ok of ['main', 'agent/turn-3', 'release-1.2', 'a_b']) assert.equal(branchNameOk(ok), true, ok);
    for (const bad of ['', '-x', 'a..b', 'a//b', '/a', 'a/', 'x.lock', 'a b', 'a~1', 'a:b', 'x'.repeat(201)]) assert.equal(branchNameOk(bad), false, bad);
  });

  it('maps statuses to failures and masks token-like runs in excerpts', () => {
    assert.deepEqual([401, 403, 404, 409, 422, 429, 500, 503, 302].map(failureOfStatus),
      ['refused', 'refused', 'not_found', 'refused', 'refused', 'unavailable', 'unavailable', 'unavailable', 'bad_answer']);
    const excerpt = safeExcerpt('bad token ghs_0123456789abcdefghijklmnop for Basic Zm9yZ2UtYWRtaW46c2VjcmV0LXBhc3N3b3Jk here\u0000');
    assert.equal(excerpt, 'bad token *** for Basic *** here\uFFFD');
    assert.equal(safeExcerpt('x'.repeat(10) + ' '.repeat(300), 50).length, 51);
  });
});
