/**
 * What model-written code cannot do from inside a sandbox (docs/execution-profiles.md
 * "Containment"), with the real engine under gVisor (`untrusted-vm-v1`) and under runc
 * (`trusted-v1`): each attempt runs as the member, as an agent's command does, and fails without
 * effect on the host or on another sandbox. Network probes address loopback only.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { DockerSandbox, killMemberProcesses } from '../../../../activities/docker/docker-sandbox';
import { ensureSandboxContainer } from '../../../../activities/docker/sandbox-container';
import { SandboxDiedError } from '../../../../activities/agent/types';
import { docker, removeContainers, SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels, testRunId } from '../../../support/docker';

const UID = 10001;
const LIMITS = { memoryBytes: 256 * 1024 * 1024, nanoCpus: 1e9, pids: 128, openFiles: 256 };
const run = { timeoutMs: 30_000, maxOutputBytes: 64 * 1024 };
const RUNTIMES = [
  { profile: 'untrusted-vm-v1', runtime: { name: 'runsc', isolating: true } },
  { profile: 'trusted-v1', runtime: { name: 'runc', isolating: false } },
] as const;

/** The member's processes in the container, counted as root from the sandbox's own /proc (null when the engine cannot exec now). */
async function memberProcessCount(sandbox: DockerSandbox): Promise<number | null> {
  const container = docker().getContainer(sandbox.containerName);
  try {
    const exec = await container.exec({ Cmd: ['sh', '-c', `grep -l "^Uid:[[:space:]]*${UID}[[:space:]]" /proc/[0-9]*/status 2>/dev/null | wc -l`], AttachStdout: true, Tty: true });
    const stream = await exec.start({ hijack: true, stdin: false, Tty: true });
    let out = '';
    stream.on('data', (c: Buffer) => { out += c.toString(); });
    await new Promise((resolve) => stream.on('end', resolve));
    const n = Number(out.trim());
    return Number.isInteger(n) ? n : null;
  } catch {
    return null;
  }
}

for (const { profile, runtime } of RUNTIMES) {
  describe(`sandbox containment under ${runtime.name} (${profile})`, function () {
    this.timeout(120_000);
    let sandbox: DockerSandbox;
    let neighbour: DockerSandbox;

    const sandboxFor = async (name: string): Promise<DockerSandbox> => {
      const { containerName } = await ensureSandboxContainer(docker(), {
        jobId: 'job_containment', groupId: `grp-${testRunId}-${runtime.name}-${name}`, generation: 1, attemptId: 'att_1', hostId: 'host-a',
        uid: UID, image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime, limits: LIMITS, extraLabels: testLabels(),
      });
      return new DockerSandbox(docker(), containerName, UID);
    };

    before(async () => {
      sandbox = await sandboxFor('target');
      neighbour = await sandboxFor('neighbour');
    });
    after(async () => {
      await removeContainers();
    });

    it('cannot mount a filesystem', async () => {
      const result = await sandbox.exec(['sh', '-c', 'mkdir -p /tmp/probe && mount -t tmpfs none /tmp/probe'], run);
      assert.notEqual(result.exitCode, 0);
      const mounted = await sandbox.exec(['sh', '-c', 'grep -c " /tmp/probe " /proc/mounts || true'], run);
      assert.equal(mounted.stdout.trim(), '0');
    });

    it('cannot write /proc/sys, and the host\'s value stays', async () => {
      const before = readFileSync('/proc/sys/kernel/panic', 'utf8');
      const result = await sandbox.exec(['sh', '-c', 'echo 17 > /proc/sys/kernel/panic'], run);
      assert.notEqual(result.exitCode, 0);
      assert.equal(readFileSync('/proc/sys/kernel/panic', 'utf8'), before);
    });

    it('cannot load a kernel module (init_module and finit_module are refused)', async () => {
      // x86-64 syscall numbers: init_module 175, finit_module 313.
      const result = await sandbox.exec(['python3', '-c', [
        'import ctypes, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'print(libc.syscall(175, None, 0, b""), libc.syscall(313, -1, b"", 0))',
      ].join('\n')], run);
      assert.equal(result.exitCode, 0, result.stderr);
      assert.equal(result.stdout.trim(), '-1 -1');
    });

    it('cannot see the host\'s processes', async () => {
      const marker: ChildProcess = spawn('sleep', ['424.242'], { stdio: 'ignore' });
      try {
        assert.match(readFileSync(`/proc/${marker.pid}/cmdline`, 'utf8'), /424\.242/, 'the marker runs on the host');
        const listed = await sandbox.exec(['sh', '-c', 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "; echo; ls -d /proc/[0-9]* | wc -l'], run);
        assert.ok(!listed.stdout.includes('424.242'), 'the host\'s process is invisible');
        const count = Number(listed.stdout.trim().split('\n').pop());
        assert.ok(count > 0 && count < 20, `only the sandbox's own processes: ${count}`);
      } finally {
        marker.kill();
      }
    });

    it('has no network but its own loopback: no interface besides lo, and the host\'s loopback is out of reach', async () => {
      const dev = await sandbox.exec(['cat', '/proc/net/dev'], run);
      const interfaces = dev.stdout.split('\n').slice(2).map((l) => l.split(':')[0]!.trim()).filter(Boolean);
      assert.deepEqual(interfaces, ['lo']);
      const server: Server = createServer((socket) => socket.end('host\n'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      try {
        const probe = (target: string) => sandbox.exec(['python3', '-c', [
          'import socket, sys, threading',
          `port = ${port}`,
          "if sys.argv[1] == 'own':",
          "    listener = socket.socket(); listener.bind(('127.0.0.1', port)); listener.listen(1)",
          "    threading.Thread(target=lambda: listener.accept()[0].sendall(b'own\\n'), daemon=True).start()",
          "c = socket.create_connection(('127.0.0.1', port), 3)",
          'print(c.recv(16).decode().strip())',
        ].join('\n'), target], run);
        const host = await probe('host');
        assert.notEqual(host.exitCode, 0, 'the host\'s loopback server cannot be reached');
        assert.ok(!host.stdout.includes('host'));
        const own = await probe('own');
        assert.equal(own.stdout.trim(), 'own', `the sandbox's own loopback works: ${own.stderr}`);
      } finally {
        server.close();
      }
    });

    it('contains a fork bomb: bounded, cleaned up by the member kill, host and neighbour unaffected', async () => {
      let most = 0;
      const bomb = sandbox.exec(['bash', '-c', 'b() { b | b & }; b; sleep 5'], { ...run, timeoutMs: 8000 });
      for (let i = 0; i < 6; i += 1) {
        const n = await memberProcessCount(sandbox);
        if (n !== null) most = Math.max(most, n);
        await new Promise((r) => setTimeout(r, 300));
      }
      await bomb;
      assert.ok(most <= LIMITS.pids + 2, `at most the process limit of the member at once (saw ${most})`);
      const how = await killMemberProcesses(docker(), sandbox.containerName, UID);
      assert.ok(how === 'killed' || how === 'restarted');
      assert.equal(await memberProcessCount(sandbox), 0, `nothing of the bomb is left (${how})`);
      assert.equal((await sandbox.exec(['echo', 'alive'], run)).stdout, 'alive\n', 'the sandbox serves the next command');
      assert.equal((await neighbour.exec(['echo', 'fine'], run)).stdout, 'fine\n', 'another sandbox is unaffected');
      assert.equal(spawnSync('true').status, 0, 'the host still starts processes');
    });

    it('refuses more open files than the limit', async () => {
      const result = await sandbox.exec(['python3', '-c', [
        'import os, resource',
        'fds = []',
        'try:',
        '    while True: fds.append(os.open("/dev/null", os.O_RDONLY))',
        'except OSError as e: print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], len(fds) < 300, e.errno)',
      ].join('\n')], run);
      assert.equal(result.stdout.trim(), `${LIMITS.openFiles} True 24`, result.stderr);
    });

    it('cannot allocate past the memory cap; the host is unaffected and the sandbox comes back with its files', async () => {
      await sandbox.writeFile('kept.txt', 'still here');
      const allocate = sandbox.exec(['python3', '-c', 'a = bytearray(600 * 1024 * 1024); print("allocated")'], { ...run, timeoutMs: 20_000 });
      if (runtime.isolating) {
        // gVisor either refuses the memory (the command fails) or is ended whole by the host's OOM
        // killer: then the command's answer says that the sandbox died, and why.
        const outcome = await allocate.then((result) => result, (err: unknown) => (err instanceof Error ? err : new Error(String(err))));
        if (outcome instanceof Error) {
          assert.ok(outcome instanceof SandboxDiedError, String(outcome));
          assert.match(outcome.message, /stopped during the turn.*memory cap is 256 MiB/);
        } else {
          assert.ok(!outcome.stdout.includes('allocated'), 'the allocation never succeeds');
          assert.notEqual(outcome.exitCode, 0);
        }
      } else {
        const result = await allocate;
        assert.ok(!result.stdout.includes('allocated'), 'the allocation never succeeds');
        assert.equal(result.exitCode, 137, 'runc\'s OOM killer ends the allocating process only');
      }
      assert.equal((await neighbour.exec(['echo', 'fine'], run)).stdout, 'fine\n', 'another sandbox is unaffected');
      // runc kills the allocating process; gVisor's whole sandbox may be ended by the host's OOM killer.
      // Either way the next turn's ensure starts the same container again, workspace intact.
      const again = await sandboxFor('target');
      assert.equal(await again.readFile('kept.txt', 100), 'still here');
    });
  });
}
