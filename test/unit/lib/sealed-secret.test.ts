/**
 * lib/sealed-secret.ts: AES-256-GCM sealing of credential settings, bound to the setting's name.
 */
import assert from 'node:assert/strict';
import { SealedSecretError, SecretSealer } from '../../../lib/sealed-secret';

const KEY = 'a-sealing-key-that-is-at-least-32-bytes';

describe('sealed secrets', () => {
  const sealer = new SecretSealer(KEY);

  it('opens what it sealed, with a fresh IV each time and no plaintext in the sealed text', () => {
    const a = sealer.seal('database_tool_password', 'hunter2-hunter2');
    const b = sealer.seal('database_tool_password', 'hunter2-hunter2');
    assert.notEqual(a, b);
    assert.match(a, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.ok(!a.includes('hunter2'));
    assert.equal(sealer.open('database_tool_password', a), 'hunter2-hunter2');
    assert.equal(sealer.open('x', sealer.seal('x', 'ünïcödé ✓')), 'ünïcödé ✓');
  });

  it('refuses another name, another key, altered bytes and foreign formats', () => {
    const sealed = sealer.seal('database_tool_password', 'hunter2-hunter2');
    assert.throws(() => sealer.open('other_setting', sealed), SealedSecretError);
    assert.throws(() => new SecretSealer(`${KEY}-rotated`).open('database_tool_password', sealed), SealedSecretError);
    const parts = sealed.split('.');
    const body = Buffer.from(parts[2]!, 'base64url');
    body[0] = body[0]! ^ 1;
    assert.throws(() => sealer.open('database_tool_password', [parts[0], parts[1], body.toString('base64url'), parts[3]].join('.')), SealedSecretError);
    for (const bad of ['', 'plaintext', 'v2.a.b.c', 'v1.a.b', 'v1.!!.??.**']) assert.throws(() => sealer.open('k', bad), SealedSecretError);
  });

  it('derives a separate key per purpose: the same configured key under another purpose does not open it', () => {
    const tokens = new SecretSealer(KEY, 'agent-source-control-tokens-v1');
    const sealed = tokens.seal('agent_github_accounts:sca_a:access_token', 'ghu_secret');
    assert.equal(tokens.open('agent_github_accounts:sca_a:access_token', sealed), 'ghu_secret');
    assert.throws(() => sealer.open('agent_github_accounts:sca_a:access_token', sealed), SealedSecretError);
  });

  it('refuses a key shorter than 32 bytes', () => {
    assert.throws(() => new SecretSealer('x'.repeat(31)), /at least 32 bytes/);
  });
});
