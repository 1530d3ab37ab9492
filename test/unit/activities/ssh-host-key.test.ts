/**
 * The SSH server's host key: generated once and kept (mode 0600), and never one of the malformed
 * Ed25519 keys ssh2's generator sometimes draws (a public half missing its leading zero byte).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { utils } from 'ssh2';
import { generateEd25519, loadOrCreateHostKey } from '../../../activities/ssh/host-key';

describe('SSH host key', () => {
  it('is generated at the first start, kept with mode 0600, and read back unchanged after', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ssh-host-key-')), 'nested', 'key');
    const first = await loadOrCreateHostKey(path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(await loadOrCreateHostKey(path), first);
    const parsed = utils.parseKey(first);
    assert.ok(!(parsed instanceof Error) && parsed.type === 'ssh-ed25519' && parsed.isPrivateKey());
  });

  it('draws only keys whose public half is whole (1,000 draws; the raw generator fails about 1 in 256)', () => {
    for (let i = 0; i < 1000; i += 1) {
      const key = utils.parseKey(generateEd25519());
      assert.ok(!(key instanceof Error));
      // ssh-ed25519 wire form: 4 + 11 (type) + 4 + 32 (the key) bytes.
      assert.equal(key.getPublicSSH().length, 51);
    }
  });
});
