/**
 * A real Gitea for tests (docs/forges.md "Gitea in the tests"): one per test process, started on
 * first use from the build the bootstrap caches (`.tools/gitea-<version>/`, ops/dev/gitea.ts) on a
 * free loopback port, with sqlite in a temporary folder, no mailer, no SSH, offline, OAuth2 on
 * (access tokens 8 h, single-use refresh tokens about 6 months: the accounts work uses it as a
 * provider), and one site administrator made with `gitea admin user create`. Stopped and removed
 * by the root hook. No build is a failure that names the bootstrap, never a skip.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { atRunEnd } from './root-hooks';
import { freeLoopbackPort } from '../../ops/dev/free-port';
import { giteaBinary, giteaHome } from '../../ops/dev/gitea';
import { stopProcess } from '../../ops/dev/s3-server';

export interface GiteaUser {
  username: string;
  password: string;
}

export interface TestGitea {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url: string;
  admin: GiteaUser;
  workDir: string;
  logFile: string;
  stop(): Promise<void>;
}

/** Gitea's configuration for a test instance (see the header). */
function appIni(workDir: string, port: number): string {
  return `APP_NAME = test forge
RUN_MODE = prod
RUN_USER = ${userInfo().username}
WORK_PATH = ${workDir}
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${port}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:${port}/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = ${giteaHome()}
APP_DATA_PATH = ${workDir}/data
[database]
DB_TYPE = sqlite3
PATH = ${workDir}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL
[repository]
ROOT = ${workDir}/repositories
DEFAULT_BRANCH = main
[repository.pull-request]
WORK_IN_PROGRESS_PREFIXES = WIP:,[WIP]
[security]
INSTALL_LOCK = true
[oauth2]
ENABLED = true
ACCESS_TOKEN_EXPIRATION_TIME = 28800
REFRESH_TOKEN_EXPIRATION_TIME = 4380
INVALIDATE_REFRESH_TOKENS = true
[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
[mailer]
ENABLED = false
[session]
PROVIDER = memory
[cache]
ADAPTER = memory
[indexer]
REPO_INDEXER_ENABLED = false
[actions]
ENABLED = false
[cron]
ENABLED = false
[log]
MODE = file
LEVEL = Warn
ROOT_PATH = ${workDir}/log
`;
}

let giteaPromise: Promise<TestGitea> | undefined;

/** The run's Gitea (started on first use). */
export function testGitea(): Promise<TestGitea> {
  giteaPromise ??= startGitea();
  return giteaPromise;
}

async function startGitea(): Promise<TestGitea> {
  const binary = giteaBinary();
  if (!existsSync(binary)) {
    throw new Error(`Gitea build ${binary} is missing: run the bootstrap (bash ops/dev/bootstrap.sh, part of npm test), which builds and caches it`);
  }
  const workDir = mkdtempSync(join(tmpdir(), 'gitea-test-'));
  atRunEnd(teardownGitea);
  mkdirSync(join(workDir, 'data'), { recursive: true });
  const port = await freeLoopbackPort();
  const config = join(workDir, 'app.ini');
  writeFileSync(config, appIni(workDir, port));
  const logFile = join(workDir, 'gitea-stdout.log');
  const env = { ...process.env, HOME: workDir, GITEA_WORK_DIR: workDir, GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT: 'true' };
  const fd = openSync(logFile, 'a');
  const child = spawn(binary, ['web', '--config', config, '--work-path', workDir], { stdio: ['ignore', fd, fd], env, cwd: workDir });
  closeSync(fd);
  const url = `http://127.0.0.1:${port}`;
  const stop = (): Promise<void> => stopProcess(child.pid ?? 0, 5000, child);
  try {
    await waitAnswering(url, () => child.exitCode !== null, logFile);
    const admin = { username: 'forge-admin', password: `A1-${randomBytes(12).toString('hex')}` };
    const made = spawnSync(binary, ['admin', 'user', 'create', '--config', config, '--work-path', workDir, '--username', admin.username,
      '--password', admin.password, '--email', 'forge-admin@example.test', '--admin', '--must-change-password=false'], { env, cwd: workDir, encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`gitea admin user create failed: ${made.stderr || made.stdout}`);
    return { url, admin, workDir, logFile, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitAnswering(url: string, exited: () => boolean, logFile: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`Gitea exited while starting: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    const ok = await fetch(`${url}/api/v1/version`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`Gitea on ${url} not answering after 60 s; see ${logFile}`);
}

/** Stops the run's Gitea and removes its folder. */
export async function teardownGitea(): Promise<void> {
  if (!giteaPromise) return;
  const pending = giteaPromise;
  giteaPromise = undefined;
  const gitea = await pending.catch(() => undefined);
  if (!gitea) return;
  await gitea.stop();
  rmSync(gitea.workDir, { recursive: true, force: true });
}

/** `Authorization: Basic …` of a user's password (Gitea's API accepts it, and a token as the password). */
export function basicAuth(user: string, secret: string): string {
  return `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
}

/** Calls Gitea's API as `auth` (default: the site administrator); throws with the status and body unless 2xx. */
export async function giteaApi<T>(method: string, path: string, body?: unknown, auth?: string): Promise<T> {
  const gitea = await testGitea();
  const response = await fetch(`${gitea.url}/api/v1${path}`, {
    method,
    headers: { authorization: auth ?? basicAuth(gitea.admin.username, gitea.admin.password), 'content-type': 'application/json', accept: 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`Gitea ${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

let counter = 0;
/** A name no other call of this process returns (Gitea names: letters, digits, dashes). */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${randomBytes(3).toString('hex')}`;
}

/** Creates a user with a password (no change required). */
export async function createGiteaUser(username = uniqueName('user')): Promise<GiteaUser> {
  const password = `P1-${randomBytes(12).toString('hex')}`;
  await giteaApi('POST', '/admin/users', { username, password, email: `${username}@example.test`, must_change_password: false });
  return { username, password };
}

/** A scoped access token of `user` (e.g. `['read:repository']`). */
export async function createGiteaToken(user: GiteaUser, scopes: string[]): Promise<string> {
  const made = await giteaApi<{ sha1: string }>('POST', `/users/${user.username}/tokens`, { name: uniqueName('token'), scopes }, basicAuth(user.username, user.password));
  return made.sha1;
}

/** Creates `owner/name` with an initial commit (a README) on `main`. */
export async function createGiteaRepo(owner: string, name = uniqueName('repo'), options: { private?: boolean } = {}): Promise<{ owner: string; name: string; cloneUrl: string }> {
  const repo = await giteaApi<{ clone_url: string }>('POST', `/admin/users/${owner}/repos`, {
    name, private: options.private ?? true, auto_init: true, readme: 'Default', default_branch: 'main',
  });
  return { owner, name, cloneUrl: repo.clone_url };
}

/** Adds `username` to `owner/name` with `permission` (`read`, `write` or `admin`). */
export async function addGiteaCollaborator(owner: string, name: string, username: string, permission: 'read' | 'write' | 'admin'): Promise<void> {
  await giteaApi('PUT', `/repos/${owner}/${name}/collaborators/${username}`, { permission });
}

/** An OAuth2 application owned by `user` (`POST /user/applications/oauth2`). */
export async function createGiteaOAuth2App(
  user: GiteaUser, options: { name?: string; redirectUris: string[]; confidential?: boolean },
): Promise<{ id: number; clientId: string; clientSecret: string }> {
  const app = await giteaApi<{ id: number; client_id: string; client_secret: string }>('POST', '/user/applications/oauth2', {
    name: options.name ?? uniqueName('app'), redirect_uris: options.redirectUris, confidential_client: options.confidential ?? true,
  }, basicAuth(user.username, user.password));
  return { id: app.id, clientId: app.client_id, clientSecret: app.client_secret };
}

/** A pull request as Gitea's API reports it (the fields tests read). */
export interface GiteaPull {
  number: number;
  title: string;
  body: string;
  draft: boolean;
  state: string;
  html_url: string;
  head: { ref: string };
  base: { ref: string };
  user: { login: string };
}

/** Every pull request of `owner/name`, open and closed. */
export function listGiteaPulls(owner: string, name: string): Promise<GiteaPull[]> {
  return giteaApi<GiteaPull[]>('GET', `/repos/${owner}/${name}/pulls?state=all&limit=50`);
}

/** One pull request. */
export function getGiteaPull(owner: string, name: string, index: number): Promise<GiteaPull> {
  return giteaApi<GiteaPull>('GET', `/repos/${owner}/${name}/pulls/${index}`);
}
