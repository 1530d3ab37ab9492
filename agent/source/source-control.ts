/**
 * The deployment's source-control providers and the key that seals owners' tokens, built from
 * settings (docs/source-control.md, "Configuration"). A provider is offered only when its client
 * id, client secret and redirect URL are all set (Gitea also needs its base URL). Without
 * `AGENT_SOURCE_CONTROL_ENCRYPTION_KEY` no account can be linked or used.
 */
import { AppError } from '../../lib/errors';
import { SecretSealer } from '../../lib/sealed-secret';
import type { Settings } from '../../lib/settings';
import { GiteaProvider } from './gitea-provider';
import { GithubProvider } from './github-provider';
import { PROVIDER_NAMES, type ProviderName, type ScmProvider } from './provider';

/** The HKDF purpose of the source-control key: its derived key seals nothing else. */
export const SOURCE_CONTROL_SEALER_PURPOSE = 'agent-source-control-tokens-v1';

export type SourceControlSettings = Pick<Settings,
  | 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY' | 'AGENT_GITHUB_OAUTH_CLIENT_ID' | 'AGENT_GITHUB_OAUTH_CLIENT_SECRET' | 'AGENT_GITHUB_OAUTH_REDIRECT_URL'
  | 'AGENT_GITHUB_WEB_URL' | 'AGENT_GITHUB_API_URL' | 'AGENT_GITEA_URL' | 'AGENT_GITEA_OAUTH_CLIENT_ID' | 'AGENT_GITEA_OAUTH_CLIENT_SECRET'
  | 'AGENT_GITEA_OAUTH_REDIRECT_URL' | 'AGENT_SOURCE_CONTROL_HTTP_TIMEOUT_MS'>;

export interface SourceControl {
  /** Seals and opens owners' tokens; undefined without the key. */
  sealer: SecretSealer | undefined;
  providers: ReadonlyMap<ProviderName, ScmProvider>;
}

function configuredProviders(s: SourceControlSettings): Map<ProviderName, ScmProvider> {
  const providers = new Map<ProviderName, ScmProvider>();
  const timeoutMs = s.AGENT_SOURCE_CONTROL_HTTP_TIMEOUT_MS;
  if (s.AGENT_GITHUB_OAUTH_CLIENT_ID && s.AGENT_GITHUB_OAUTH_CLIENT_SECRET && s.AGENT_GITHUB_OAUTH_REDIRECT_URL) {
    providers.set('github', new GithubProvider({
      clientId: s.AGENT_GITHUB_OAUTH_CLIENT_ID, clientSecret: s.AGENT_GITHUB_OAUTH_CLIENT_SECRET, redirectUrl: s.AGENT_GITHUB_OAUTH_REDIRECT_URL,
      webUrl: s.AGENT_GITHUB_WEB_URL, apiUrl: s.AGENT_GITHUB_API_URL, timeoutMs,
    }));
  }
  if (s.AGENT_GITEA_URL && s.AGENT_GITEA_OAUTH_CLIENT_ID && s.AGENT_GITEA_OAUTH_CLIENT_SECRET && s.AGENT_GITEA_OAUTH_REDIRECT_URL) {
    providers.set('gitea', new GiteaProvider({
      baseUrl: s.AGENT_GITEA_URL, clientId: s.AGENT_GITEA_OAUTH_CLIENT_ID, clientSecret: s.AGENT_GITEA_OAUTH_CLIENT_SECRET,
      redirectUrl: s.AGENT_GITEA_OAUTH_REDIRECT_URL, timeoutMs,
    }));
  }
  return providers;
}

/** The providers and sealer these settings configure. */
export function sourceControlFromSettings(settings: SourceControlSettings): SourceControl {
  const key = settings.AGENT_SOURCE_CONTROL_ENCRYPTION_KEY;
  return { sealer: key ? new SecretSealer(key, SOURCE_CONTROL_SEALER_PURPOSE) : undefined, providers: configuredProviders(settings) };
}

/** The configured provider named `name`; 404 for an unknown or unconfigured one. */
export function requireProvider(sc: SourceControl, name: string): ScmProvider {
  const provider = (PROVIDER_NAMES as readonly string[]).includes(name) ? sc.providers.get(name as ProviderName) : undefined;
  if (!provider) throw new AppError('not_found', `The source-control provider '${name}' is not configured on this deployment`);
  return provider;
}

/** The sealer; 503 while the deployment has no `AGENT_SOURCE_CONTROL_ENCRYPTION_KEY`. */
export function requireSealer(sc: SourceControl): SecretSealer {
  if (!sc.sealer) throw new AppError('service_unavailable', 'Source-control accounts are not available: AGENT_SOURCE_CONTROL_ENCRYPTION_KEY is not set on this deployment');
  return sc.sealer;
}
