/**
 * The deployment's forges from its settings (docs/forges.md), and the repository credentials the
 * control-plane API mints through them. The GitHub adapter is there when the source-control app is
 * configured; the Gitea adapter when `AGENT_GITEA_URL` is set. A job's repository is served by the
 * first forge whose `repoOf` claims it. A forge's failure becomes an API error that names the forge
 * and holds no credential: 503 while it is unavailable (retry), 502 when it refused or answered badly.
 */
import type { KeyObject } from 'node:crypto';
import { AppError } from '../../lib/errors';
import type { Settings } from '../../lib/settings';
import type { RepoCredentials, RepoToken } from '../../agent/source/repo-credentials';
import type { SourceControlState } from '../../agent/jobs/source-control-app';
import { ForgeError, type Forge, type ForgeRepo } from './forge';
import { GiteaForge } from './gitea-forge';
import { GitHubForge } from './github-forge';

type ForgeSettings = Pick<Settings,
  'AGENT_SOURCE_CONTROL_APP_ID' | 'AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH' | 'AGENT_GITHUB_API_URL' | 'AGENT_GITHUB_WEB_URL' | 'AGENT_GITEA_URL'
  | 'AGENT_GITEA_ADMIN_USERNAME' | 'AGENT_GITEA_ADMIN_PASSWORD' | 'AGENT_GITEA_SERVICE_USER_PREFIX' | 'AGENT_GITEA_DRAFT_PREFIX'>;

/** The configured forges; `app` reads the source-control app's current state (agent/jobs/source-control-app.ts). */
export function forgesFromSettings(settings: ForgeSettings, app: () => SourceControlState): Forge[] {
  const forges: Forge[] = [];
  if (settings.AGENT_SOURCE_CONTROL_APP_ID || settings.AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH) {
    const credentials = (): { appId: string; key: KeyObject } => {
      const state = app();
      if (state.state !== 'loaded') throw new Error(state.state === 'unavailable' ? state.reason : 'not configured');
      return { appId: state.appId, key: state.key };
    };
    forges.push(new GitHubForge({ apiUrl: settings.AGENT_GITHUB_API_URL, webUrl: settings.AGENT_GITHUB_WEB_URL, app: credentials }));
  }
  if (settings.AGENT_GITEA_URL && settings.AGENT_GITEA_ADMIN_USERNAME && settings.AGENT_GITEA_ADMIN_PASSWORD) {
    forges.push(new GiteaForge({
      baseUrl: settings.AGENT_GITEA_URL,
      admin: { username: settings.AGENT_GITEA_ADMIN_USERNAME, password: settings.AGENT_GITEA_ADMIN_PASSWORD },
      serviceUserPrefix: settings.AGENT_GITEA_SERVICE_USER_PREFIX,
      draftPrefix: settings.AGENT_GITEA_DRAFT_PREFIX,
    }));
  }
  return forges;
}

/** The forge that serves `repo` and the repository it names there, if any. */
export function forgeFor(forges: readonly Forge[], repo: string): { forge: Forge; repo: ForgeRepo } | undefined {
  for (const forge of forges) {
    const named = forge.repoOf(repo);
    if (named) return { forge, repo: named };
  }
  return undefined;
}

/** A forge failure as the API answers it (the message is the forge adapter's: no credential in it). */
export function forgeAppError(err: unknown): unknown {
  if (!(err instanceof ForgeError)) return err;
  if (err.failure === 'unavailable') return new AppError('service_unavailable', `The repository's forge is unavailable: ${err.message}`, { cause: err });
  return new AppError('upstream_error', `The repository's forge refused the credential: ${err.message}`, { cause: err });
}

async function minted(forges: readonly Forge[], repo: string, mint: (forge: Forge, named: ForgeRepo) => Promise<RepoToken>): Promise<RepoToken | undefined> {
  const served = forgeFor(forges, repo);
  if (!served) return undefined;
  try {
    return await mint(served.forge, served.repo);
  } catch (err) {
    throw forgeAppError(err);
  }
}

/** The API's repository credentials over `forges`; repo tokens (`SCM_TOKEN`) only with `repoTokens` (the source-control app configured). */
export function repoCredentialsOf(forges: readonly Forge[], options: { repoTokens: boolean }): RepoCredentials {
  return {
    cloneToken: (repo) => minted(forges, repo, (forge, named) => forge.cloneToken(named)),
    ...(options.repoTokens ? { repoToken: (repo: string) => minted(forges, repo, (forge, named) => forge.repoToken(named)) } : {}),
  };
}
