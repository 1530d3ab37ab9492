/**
 * The host runner's runtime preflight against the real Docker engine with gVisor and runc
 * (docs/execution-profiles.md "Preflight and attestation"): what a host attests follows what its
 * probe containers saw, and a host whose isolating runtime disappears stops attesting it.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { runPreflight } from '../../../../activities/docker/runtime-preflight';
import { DEFAULT_RUNTIMES } from '../../../../activities/docker/container-runtime';
import { docker, removeContainers, SANDBOX_IMAGE, testLabels, testRunId } from '../../../support/docker';
import { eventually } from '../../../support/accounts';

const DAEMON_JSON = '/etc/docker/daemon.json';

describe('runtime preflight (Docker with runsc and runc)', function () {
  this.timeout(120_000);
  const preflight = (overrides: Partial<Parameters<typeof runPreflight>[0]> = {}) =>
    runPreflight({ docker: docker(), image: SANDBOX_IMAGE, runtimes: DEFAULT_RUNTIMES, labels: testLabels(), ...overrides });

  after(async () => {
    await removeContainers();
  });

  it('attests both profiles on a host whose isolating runtime runs its own kernel, and removes its probes', async () => {
    const result = await preflight();
    const isolating = result.probes.find((p) => p.runtime === 'runsc');
    const trusted = result.probes.find((p) => p.runtime === 'runc');
    assert.equal(result.host_kernel, release());
    assert.equal(trusted?.ok, true);
    assert.equal(trusted?.guest_kernel, release(), 'runc shares the host kernel');
    assert.equal(isolating?.ok, true, JSON.stringify(isolating));
    assert.notEqual(isolating?.guest_kernel, release(), 'gVisor reports a kernel of its own');
    assert.deepEqual(result.attestations, ['trusted-v1', 'untrusted-vm-v1', 'shared-sandbox-v1', 'sandbox-helper-3', 'native-fork-at-anchor-v1']);
    assert.deepEqual(result.refused, {});
    assert.equal(result.shared_kernel_accepted, false);
    const left = await docker().listContainers({ all: true, filters: { label: [`agent.test-run=${testRunId}`, 'agent.probe'] } });
    assert.equal(left.length, 0, 'probe containers are removed');
  });

  it('refuses untrusted-vm-v1 when the isolating runtime sees the host kernel (no guest kernel of its own)', async () => {
    const guest = (await preflight()).probes.find((p) => p.runtime === 'runsc')?.guest_kernel;
    assert.ok(guest);
    // A host whose kernel release equals what the "isolating" probe saw: as if the runtime shared it.
    const result = await preflight({ hostKernel: guest });
    assert.ok(!result.attestations.includes('untrusted-vm-v1'));
    assert.ok(result.attestations.includes('trusted-v1'));
    assert.match(result.refused['untrusted-vm-v1'] ?? '', /runs on the host kernel .*no guest kernel of its own/);
  });

  it('attests nothing untrusted for a runtime the engine does not know, and says why', async () => {
    const result = await preflight({ runtimes: { ...DEFAULT_RUNTIMES, isolating: `nonexistent-${process.pid}` } });
    assert.deepEqual(result.attestations, ['trusted-v1', 'shared-sandbox-v1', 'sandbox-helper-3', 'native-fork-at-anchor-v1']);
    assert.match(result.refused['untrusted-vm-v1'] ?? '', /isolating runtime nonexistent-\d+ failed its probe: .*runtime/i);
  });

  it('with AGENT_SANDBOX_BACKEND=container attests untrusted-vm-v1 on the shared kernel, saying so, and probes no isolating runtime', async () => {
    const result = await preflight({ runtimes: { ...DEFAULT_RUNTIMES, isolating: `nonexistent-${process.pid}`, backend: 'container' } });
    assert.deepEqual(result.attestations, ['trusted-v1', 'untrusted-vm-v1', 'shared-sandbox-v1', 'sandbox-helper-3', 'native-fork-at-anchor-v1']);
    assert.equal(result.shared_kernel_accepted, true);
    assert.deepEqual(result.probes.map((p) => p.runtime), ['runc']);
  });

  describe('an isolating runtime that disappears', () => {
    const name = `runsc-vanishing-${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), 'runsc-vanishing-'));
    const wrapper = join(dir, 'runsc');
    let original: string | undefined;

    const reload = async (present: boolean): Promise<void> => {
      execFileSync('kill', ['-HUP', readFileSync('/var/run/docker.pid', 'utf8').trim()]);
      await eventually(async () => Object.keys(((await docker().info()) as { Runtimes: Record<string, unknown> }).Runtimes).includes(name) === present,
        `dockerd to ${present ? 'list' : 'drop'} ${name}`);
    };

    before(async () => {
      assert.ok(existsSync(DAEMON_JSON) && existsSync('/var/run/docker.pid'), 'the bootstrap registers runsc in daemon.json of a dockerd with a pid file');
      original = readFileSync(DAEMON_JSON, 'utf8');
      const config = JSON.parse(original) as { runtimes: Record<string, unknown> };
      // The same gVisor, reached through a file this test can delete: the runtime's binary "disappears".
      writeFileSync(wrapper, '#!/bin/sh\nexec /usr/bin/runsc "$@"\n');
      chmodSync(wrapper, 0o755);
      config.runtimes[name] = { path: wrapper, runtimeArgs: ['--network=none', '--overlay2=none'] };
      writeFileSync(DAEMON_JSON, JSON.stringify(config, null, 2));
      await reload(true);
    });

    after(async () => {
      if (original !== undefined) {
        writeFileSync(DAEMON_JSON, original);
        await reload(false);
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('is attested while its binary is there, and no longer once it is gone', async () => {
      const runtimes = { ...DEFAULT_RUNTIMES, isolating: name };
      const before = await preflight({ runtimes });
      assert.ok(before.attestations.includes('untrusted-vm-v1'), JSON.stringify(before.refused));
      rmSync(wrapper);
      const after = await preflight({ runtimes });
      assert.ok(!after.attestations.includes('untrusted-vm-v1'));
      assert.ok(after.attestations.includes('trusted-v1'), 'runc work goes on');
      assert.match(after.refused['untrusted-vm-v1'] ?? '', new RegExp(`isolating runtime ${name} failed its probe`));
    });
  });
});
