/**
 * Pure rules of retained sandboxes: container names of groups, member accounts, paths inside the
 * sandbox, and which repository strings a workspace may be cloned from.
 */
import assert from 'node:assert/strict';
import { memberPaths } from '../../activities/docker/sandbox-container';
import { sandboxContainerName } from '../../agent/sandboxes/names';
import { sandboxPath } from '../../activities/docker/docker-sandbox';
import { UnsupportedRepoError, validateCloneInput } from '../../activities/docker/workspace-clone';
import { SandboxFileError } from '../../activities/agent/types';

describe('sandbox names and paths', () => {
  it('names a group container sbx-<groupId> and refuses unsafe group ids', () => {
    assert.equal(sandboxContainerName('grp_abc-1.2'), 'sbx-grp_abc-1.2');
    for (const bad of ['', '-lead', 'a/b', 'a b', 'x'.repeat(102)]) assert.throws(() => sandboxContainerName(bad), /Invalid sandbox group id/, bad);
  });

  it('derives the member account, home and session dir from the UID', () => {
    assert.deepEqual(memberPaths(1001), { user: 'member-1001', home: '/home/member-1001', sessionDir: '/home/member-1001/.agent' });
    for (const bad of [0, 999, 1.5, -1]) assert.throws(() => memberPaths(bad), /Invalid member UID/);
  });

  it('resolves relative paths under /workspace and keeps absolute ones', () => {
    assert.equal(sandboxPath('a/b.txt'), '/workspace/a/b.txt');
    assert.equal(sandboxPath('./a/../c'), '/workspace/c');
    assert.equal(sandboxPath('/home/member-1001/.agent/s.json'), '/home/member-1001/.agent/s.json');
    assert.throws(() => sandboxPath(''), SandboxFileError);
    assert.throws(() => sandboxPath('a\0b'), SandboxFileError);
  });

  it('accepts https:// and file:// repositories (http:// to a loopback host only), without credentials in the URL', () => {
    assert.equal(validateCloneInput({ repo: 'https://example.com/o/r.git' }), 'https://example.com/o/r.git');
    assert.equal(validateCloneInput({ repo: 'http://127.0.0.1:3000/o/r.git' }), 'http://127.0.0.1:3000/o/r.git');
    assert.equal(validateCloneInput({ repo: 'file:///srv/git/r.git', baseRef: 'release/1.x', baseSha: 'abc1234' }), 'file:///srv/git/r.git');
    for (const repo of ['owner/name', 'git@example.com:o/r.git', 'ssh://example.com/o/r', 'http://example.com/o/r', 'http://10.0.0.1/o/r', 'https://u:p@example.com/o/r']) {
      assert.throws(() => validateCloneInput({ repo }), UnsupportedRepoError, repo);
    }
    assert.throws(() => validateCloneInput({ repo: 'https://example.com/r', baseRef: '--upload-pack=x' }), UnsupportedRepoError);
    assert.throws(() => validateCloneInput({ repo: 'https://example.com/r', baseSha: 'HEAD~1' }), UnsupportedRepoError);
  });
});
