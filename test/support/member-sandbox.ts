/**
 * A real retained sandbox for driver tests: a group container made by `ensureSandboxContainer`
 * (as the host runner makes them) and the member's `DockerSandbox`, labelled for this test run.
 */
import type Docker from 'dockerode';
import { DockerSandbox } from '../../activities/docker/docker-sandbox';
import { DEFAULT_SANDBOX_LIMITS } from '../../activities/docker/sandbox-command';
import { ensureSandboxContainer, memberPaths } from '../../activities/docker/sandbox-container';
import { removeSandboxContainer } from '../../activities/docker/sandbox-removal';
import { newId } from '../../agent/jobs/job-store';
import { docker, SANDBOX_IMAGE, TEST_DISK_ROOT, testLabels, testRuntime } from './docker';

export const TEST_MEMBER_UID = 10001;

export interface MemberSandbox {
  container: Docker.Container;
  sandbox: DockerSandbox;
  /** The member's private session directory; tests put each chat's session under it. */
  sessionRoot: string;
  remove(): Promise<void>;
}

export async function startMemberSandbox(labels: Record<string, string>): Promise<MemberSandbox> {
  const groupId = newId('grp');
  const ensured = await ensureSandboxContainer(docker(), {
    jobId: newId('job'), groupId, generation: 1, attemptId: newId('att'), hostId: 'test-host', uid: TEST_MEMBER_UID,
    image: SANDBOX_IMAGE, diskRoot: TEST_DISK_ROOT, runtime: testRuntime(), limits: DEFAULT_SANDBOX_LIMITS, extraLabels: testLabels(labels),
  });
  const container = docker().getContainer(ensured.containerName);
  return {
    container,
    sandbox: new DockerSandbox(docker(), ensured.containerName, TEST_MEMBER_UID),
    sessionRoot: memberPaths(TEST_MEMBER_UID).sessionDir,
    remove: async () => {
      await removeSandboxContainer(docker(), groupId, TEST_DISK_ROOT);
    },
  };
}
