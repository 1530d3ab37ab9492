/**
 * Activities that run on an execution host's task queue (`host:<hostId>`) and use its
 * Docker engine. Built by a factory so tests pass a real engine and their own image.
 */
import { Context, ApplicationFailure } from '@temporalio/activity';
import type Docker from 'dockerode';
import { FailureType } from '../workflows/definitions/failures';
import {
  containerName, ImageMissingError, runSandboxCommand as runInContainer,
  type SandboxCommandInput, type SandboxCommandResult, type SandboxLimits,
} from './docker/sandbox-command';
import { createSandboxActivities, type SandboxActivityDeps } from './sandbox-activities';
import { DEFAULT_RUNTIMES, dockerRuntimeFor } from './docker/container-runtime';
import { createTurnActivities, type TurnActivityDeps } from './agent/turn-activities';

/** What host activities need: the local engine, the sandbox image and caps, and (optional) the object store and clone credentials. */
export interface HostActivityDeps extends SandboxActivityDeps {
  docker: Docker;
  hostId: string;
  image: string;
  limits?: SandboxLimits;
  /** What turns need (the API, the gateway); without it the host runs sandbox commands only. */
  turns?: TurnActivityDeps;
}

export function createHostActivities(deps: HostActivityDeps) {
  return {
    ...createSandboxActivities(deps),
    ...createTurnActivities({ docker: deps.docker, hostId: deps.hostId, turns: deps.turns }),
    /** Runs a command in a fresh container from the sandbox image; the container is always removed. */
    async runSandboxCommand(input: SandboxCommandInput): Promise<SandboxCommandResult> {
      const ctx = Context.current();
      const name = containerName('cmd', ctx.info.workflowExecution?.workflowId ?? 'standalone', ctx.info.activityId);
      // A one-off command runs what the workflow asked, which may be anyone's: the untrusted profile's runtime.
      const runtime = dockerRuntimeFor(deps.runtimes ?? DEFAULT_RUNTIMES, input.executionProfile);
      try {
        return await runInContainer(
          { ...input, labels: { ...input.labels, 'agent.host': deps.hostId } },
          { docker: deps.docker, image: deps.image, name, runtime, ...(deps.limits ? { limits: deps.limits } : {}), onWaiting: () => ctx.heartbeat() },
        );
      } catch (err) {
        if (err instanceof ImageMissingError) throw ApplicationFailure.nonRetryable(err.message, FailureType.imageMissing);
        throw err;
      }
    },
  };
}

export type HostActivities = ReturnType<typeof createHostActivities>;
