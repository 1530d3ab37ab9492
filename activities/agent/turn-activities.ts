/**
 * Host-queue activities of a turn: `runAgentTurn` (the agent at work) and `fenceMember` (kills
 * whatever a lost attempt left running in the member's sandbox).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { killMemberProcesses } from '../docker/docker-sandbox';
import { sandboxContainerName } from '../../agent/sandboxes/names';
import { FailureType } from '../../workflows/definitions/failures';
import { runAgentTurn, type RunTurnInput, type TurnRunnerDeps } from './turn-runner';

export type TurnActivityDeps = Omit<TurnRunnerDeps, 'docker' | 'hostId'>;

export function createTurnActivities(deps: { docker: Docker; hostId: string; turns: TurnActivityDeps | undefined }) {
  const { turns } = deps;
  return {
    async runAgentTurn(input: RunTurnInput): Promise<{ result: string }> {
      if (!turns) throw ApplicationFailure.nonRetryable('This host runner is not configured to run turns', FailureType.turnsNotConfigured);
      return runAgentTurn({ ...turns, docker: deps.docker, hostId: deps.hostId }, input);
    },
    async fenceMember(input: { groupId: string; uid: number }): Promise<void> {
      Context.current().heartbeat();
      await killMemberProcesses(deps.docker, sandboxContainerName(input.groupId), input.uid);
    },
  };
}
