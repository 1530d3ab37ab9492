/**
 * A job's `repo` string read as a repository of one forge (docs/forges.md "Which forge serves a
 * job"): an `https://` URL (or `http://` on a loopback host) under the forge's base URL, with the
 * path `<owner>/<name>` or `<owner>/<name>.git` below it and nothing else (no credentials, query
 * or fragment). Owner and name use the characters both forges allow.
 */
import type { ForgeRepo } from './forge';

const SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,100}$/;
const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])$/;

/** Whether `url` may carry a forge credential: HTTPS, or plain HTTP to this machine only. */
export function transportAllowed(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname));
}

/** Parses and checks a forge's base URL (settings); use {@link baseHref} to build on it. */
export function forgeBaseUrl(value: string, setting: string): URL {
  const url = new URL(value);
  if (!transportAllowed(url)) throw new Error(`${setting} must be an https:// URL (http:// only on a loopback host)`);
  if (url.username || url.password || url.search || url.hash) throw new Error(`${setting} must not carry credentials, a query or a fragment`);
  return url;
}

/** `base` as text with no trailing slash: the prefix of its API and repository URLs. */
export function baseHref(base: URL): string {
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}`;
}

/** The repository `repo` names under `base`, or undefined when it is not one of that forge's. */
export function repoFromUrl(repo: string, base: URL): ForgeRepo | undefined {
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    return undefined;
  }
  if (url.origin !== base.origin || url.username || url.password || url.search || url.hash) return undefined;
  const prefix = `${base.pathname.replace(/\/+$/, '')}/`;
  if (!url.pathname.startsWith(prefix)) return undefined;
  const parts = url.pathname.slice(prefix.length).replace(/\/$/, '').split('/');
  if (parts.length !== 2) return undefined;
  const owner = parts[0] ?? '';
  const name = (parts[1] ?? '').replace(/\.git$/, '');
  return SEGMENT.test(owner) && SEGMENT.test(name) ? { owner, name } : undefined;
}

/** `owner/name` checked as {@link repoFromUrl} checks it (the adapters refuse anything else before a call). */
export function assertRepoNames(repo: ForgeRepo): void {
  if (!SEGMENT.test(repo.owner) || !SEGMENT.test(repo.name)) throw new Error(`Not a repository name: ${JSON.stringify(`${repo.owner}/${repo.name}`).slice(0, 220)}`);
}

/** A branch name a forge call may carry (git's rules, conservatively). */
export function branchNameOk(branch: string): boolean {
  return /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*\.lock$)[A-Za-z0-9._/-]{1,200}$/.test(branch) && !branch.endsWith('/') && !branch.startsWith('/');
}

/** `Authorization` value git sends with a forge token: Basic with the token as the password (GitHub and Gitea both accept it). */
export function tokenBasicAuth(token: string): string {
  return `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
}
