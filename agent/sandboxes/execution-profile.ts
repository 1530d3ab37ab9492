/**
 * Which execution profile a new job runs under (docs/execution-profiles.md). Decided once, by the
 * control plane, when the job is created, from the owner's request, the deployment default and the
 * operator's list of reviewed repositories; recorded on the job and then on its sandbox group, so
 * nothing inside a sandbox (or a later setting change) can move a chat to a weaker boundary.
 *
 * - `untrusted-vm-v1` may always be asked for and is the fallback;
 * - `trusted-v1` only for a repository on `AGENT_TRUSTED_REPOSITORIES` (never for a temporary
 *   workspace: its only code is the model's). Asked for explicitly elsewhere: 403. Coming from the
 *   deployment default elsewhere: the job runs `untrusted-vm-v1`.
 */
import { AppError } from '../../lib/errors';
import type { ExecutionProfile } from '../../lib/execution-profiles';
import { repoEntitled } from '../jobs/entitlement';

export interface ProfileChoice {
  /** What the owner asked for, if anything. */
  requested?: ExecutionProfile;
  /** The job's repository (null: a temporary workspace). */
  repo: string | null;
  /** `AGENT_DEFAULT_EXECUTION_PROFILE`. */
  deploymentDefault: ExecutionProfile;
  /** `AGENT_TRUSTED_REPOSITORIES`, parsed like the repository allowlist. */
  trustedRepositories: readonly string[];
}

/** Whether `repo` is a reviewed repository that may run on the host's kernel. */
export function repoTrusted(repo: string | null, trustedRepositories: readonly string[]): boolean {
  return repo !== null && repoEntitled(repo, trustedRepositories);
}

/** The job's profile; throws 403 when `trusted-v1` is asked for a repository nobody reviewed. */
export function chooseExecutionProfile(choice: ProfileChoice): ExecutionProfile {
  const trusted = repoTrusted(choice.repo, choice.trustedRepositories);
  if (choice.requested === 'trusted-v1' && !trusted) {
    throw new AppError('forbidden', choice.repo === null
      ? "Execution profile 'trusted-v1' is not available for a temporary workspace"
      : "Execution profile 'trusted-v1' is only available for repositories on this deployment's trusted list", { param: 'execution_profile' });
  }
  const profile = choice.requested ?? choice.deploymentDefault;
  return profile === 'trusted-v1' && !trusted ? 'untrusted-vm-v1' : profile;
}
