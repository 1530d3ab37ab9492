/**
 * The host's sandbox activities in an activity context on the real Docker engine: prepareSandbox
 * builds the group container and workspace (asking the host for the clone credential), is
 * idempotent, creates a container with the turn's caps (host settings), refuses a repository
 * above the turn's size limit, and turns permanent problems into non-retryable failures with a type.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { PERMANENT_SANDBOX_FAILURES } from '../../workflows/definitions/failures';
import { createSandboxActivities, SANDBOX_ERROR_FAILURE_TYPES, type PrepareSandboxInput, type PrepareSandboxResult, type SandboxActivityDeps } from '../../activities/sandbox-activities';
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { ensureSandboxContainer } from '../../activities/docker/sandbox-container';
import { TEMPORARY_WORKSPACE_SHA } from '../../activities/docker/workspace-init';
import { docker, TEST_DISK_ROOT, removeContainers, SANDBOX_IMAGE, testLabels, testRunId, testRuntime, TEST_RUNTIMES } from '../support/docker';

const noop = () => undefined;
const quiet = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };

type Activities = ReturnType<typeof createSandboxActivities>;

function activitiesWith(deps: Partial<SandboxActivityDeps>): Activities {
  return createSandboxActivities({
    docker: docker(), hostId: 'host-a', image: SANDBOX_IMAGE, sandboxDiskDir: TEST_DISK_ROOT, limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 },
    sandboxLabels: testLabels(), runtimes: TEST_RUNTIMES, ...deps,
  });
}

/** Runs prepareSandbox in an activity context, on `activities` (one host runner) or a fresh set. */
function prepare(deps: Partial<SandboxActivityDeps> | Activities, input: PrepareSandboxInput): Promise<PrepareSandboxResult> {
  const activities = 'prepareSandbox' in deps ? deps : activitiesWith(deps);
  return new MockActivityEnvironment(undefined, { logger: quiet }).run((i: PrepareSandboxInput) => activities.prepareSandbox(i), input);
}

function input(suffix: string, overrides: Partial<PrepareSandboxInput> = {}): PrepareSandboxInput {
  return { jobId: 'job_aaaaaaaaaaaaaaaaaaaa', groupId: `grp-${testRunId}-${suffix}`, generation: 1, attemptId: 'att_1', uid: 1001, repo: null, ...overrides };
}

function failsWith(type: string) {
  return (err: { type?: string; nonRetryable?: boolean }) => err.type === type && err.nonRetryable === true;
}

describe('sandbox host activities', () => {
  let scratch: string;
  let bare: string;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'sbx-act-'));
    bare = join(scratch, 'origin.git');
    const work = join(scratch, 'work');
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: scratch, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare], { env });
    execFileSync('git', ['init', '-q', '-b', 'main', work], { env });
    writeFileSync(join(work, 'app.txt'), 'app\n');
    execFileSync('git', ['add', '.'], { cwd: work, env });
    execFileSync('git', ['commit', '-q', '-m', 'app'], { cwd: work, env });
    execFileSync('git', ['push', '-q', bare, 'main'], { cwd: work, env });
  });

  after(async () => {
    await removeContainers();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('clones the repository with the credential the host looks up, and reuses the sandbox afterwards without one', async () => {
    const asked: string[] = [];
    const cloneCredential = (asking: { attemptId: string; repo: string }) => {
      asked.push(`${asking.attemptId} ${asking.repo}`);
      return Promise.resolve('ghs_hostSideCredential');
    };
    const repo = `file://${bare}`;
    const first = await prepare({ cloneCredential }, input('repo', { repo }));
    assert.deepEqual(asked, [`att_1 ${repo}`], 'the host asks for the credential of the attempt it prepares');
    const sandbox = new DockerSandbox(docker(), first.containerName, 1001);
    assert.equal(await sandbox.readFile('app.txt', 100), 'app\n');
    const head = await sandbox.exec(['git', 'rev-parse', 'HEAD'], { timeoutMs: 20_000, maxOutputBytes: 1000 });
    assert.equal(head.stdout.trim(), first.baseSha);
    // The workspace exists: the next attempt clones nothing, so a forge that is down does not fail it.
    const forgeDown = () => Promise.reject(new Error('the forge is unavailable'));
    const second = await prepare({ cloneCredential: forgeDown }, input('repo', { repo, attemptId: 'att_2' }));
    assert.deepEqual(second, first);
    const temporary = await prepare({ cloneCredential }, input('tmp'));
    assert.equal(temporary.baseSha, TEMPORARY_WORKSPACE_SHA);
    assert.deepEqual(asked, [`att_1 ${repo}`], 'a temporary workspace asks for no credential');
  });

  it('prepares a group once when two attempts on one host runner race', async () => {
    const runner = activitiesWith({});
    const [a, b] = await Promise.all([prepare(runner, input('race')), prepare(runner, input('race', { attemptId: 'att_2' }))]);
    assert.equal(a.containerId, b.containerId);
    assert.equal(a.baseSha, TEMPORARY_WORKSPACE_SHA);
    assert.equal(b.baseSha, TEMPORARY_WORKSPACE_SHA);
    const log = await new DockerSandbox(docker(), a.containerName, 1001).exec(['git', 'rev-list', '--count', 'HEAD'], { timeoutMs: 20_000, maxOutputBytes: 100 });
    assert.equal(log.stdout.trim(), '1');
  });

  it('two concurrent creations of one container (two processes) agree on the container', async () => {
    const spec = {
      jobId: 'job_aaaaaaaaaaaaaaaaaaaa', groupId: `grp-${testRunId}-race2`, generation: 1, attemptId: 'att_0', hostId: 'host-a', uid: 1001,
      image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 }, extraLabels: testLabels(),
    };
    const [a, b] = await Promise.all([ensureSandboxContainer(docker(), spec), ensureSandboxContainer(docker(), spec)]);
    assert.equal(a.containerId, b.containerId);
    assert.deepEqual([a.created, b.created].sort(), [false, true]);
  });

  it('creates a container with the caps the turn carries (CPUs fitted to the host); a container that exists keeps its own', async () => {
    const hostCpus = ((await docker().info()) as { NCPU: number }).NCPU;
    const first = await prepare({}, input('caps', { limits: { memoryBytes: 300 * 1024 * 1024, nanoCpus: 64e9 } }));
    const created = await docker().getContainer(first.containerId).inspect();
    assert.equal(created.HostConfig.Memory, 300 * 1024 * 1024, 'the turn\'s memory cap, not the runner\'s 512 MiB');
    assert.equal(created.HostConfig.NanoCpus, Math.min(64, hostCpus) * 1e9);
    const again = await prepare({}, input('caps', { attemptId: 'att_2', limits: { memoryBytes: 700 * 1024 * 1024, nanoCpus: 0.5e9 } }));
    assert.equal(again.containerId, first.containerId);
    assert.equal((await docker().getContainer(first.containerId).inspect()).HostConfig.Memory, 300 * 1024 * 1024, 'reused as it is');
    const runnerDefault = await prepare({}, input('caps-default'));
    assert.equal((await docker().getContainer(runnerDefault.containerId).inspect()).HostConfig.Memory, 512 * 1024 * 1024, 'no caps carried: the runner\'s own');
  });

  it('refuses a checkout above the turn\'s repository size limit without retry, before anything reaches the workspace', async () => {
    const repo = `file://${bare}`;
    await assert.rejects(prepare({}, input('big', { repo, repositoryMaxBytes: 1024 })), (err: { type?: string; nonRetryable?: boolean; message: string }) =>
      failsWith('RepositoryTooLarge')(err) && /more than the limit of 0\.0 MiB/.test(err.message));
    const container = await docker().getContainer(`sbx-grp-${testRunId}-big`).inspect();
    const listing = await new DockerSandbox(docker(), container.Name.slice(1), 1001).exec(['ls', '-A', '/workspace'], { timeoutMs: 20_000, maxOutputBytes: 1000 });
    assert.equal(listing.stdout.trim(), '', 'nothing was copied into the workspace');
    const fits = await prepare({}, input('fits', { repo, repositoryMaxBytes: 100 * 1024 * 1024 }));
    assert.equal(await new DockerSandbox(docker(), fits.containerName, 1001).readFile('app.txt', 100), 'app\n');
  });

  it('fails without retry for a missing image, an unsupported repository, a missing base and a generation mismatch', async () => {
    await assert.rejects(prepare({ image: 'agent-sandbox:does-not-exist' }, input('noimg')), failsWith('ImageMissing'));
    await assert.rejects(prepare({}, input('scheme', { repo: 'owner/name' })), failsWith('UnsupportedRepo'));
    await assert.rejects(prepare({}, input('nobase', { repo: `file://${bare}`, baseRef: 'no-such-branch' })), failsWith('BaseRevisionNotFound'));
    await ensureSandboxContainer(docker(), {
      jobId: 'job_aaaaaaaaaaaaaaaaaaaa', groupId: `grp-${testRunId}-gen`, generation: 2, attemptId: 'att_0', hostId: 'host-a', uid: 1001,
      image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9 }, extraLabels: testLabels(),
    });
    await assert.rejects(prepare({}, input('gen')), failsWith('SandboxGenerationMismatch'));
    const failedRuntimes: string[] = [];
    const unusable = { ...TEST_RUNTIMES, isolating: `gone-${process.pid}`, backend: 'vm' as const };
    await assert.rejects(prepare({ runtimes: unusable, onRuntimeFailure: (name) => failedRuntimes.push(name) }, input('noruntime')), failsWith('SandboxRuntimeUnavailable'));
    assert.deepEqual(failedRuntimes, [unusable.isolating], 'the runner is told, to run its preflight again');
    // The chat workflow's non-retryable list is exactly the failure types of the activity's permanent errors.
    assert.deepEqual([...PERMANENT_SANDBOX_FAILURES].sort(), [...SANDBOX_ERROR_FAILURE_TYPES].sort());
  });
});
