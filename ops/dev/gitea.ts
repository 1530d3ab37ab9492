/**
 * Gitea (MIT), the real forge of the tests (docs/forges.md "Gitea in the tests"): built once by the
 * bootstrap from the Go module proxy's `code.gitea.io/gitea@<version>` and cached as
 * `.tools/gitea-<version>/` (the binary, plus the `options/`, `templates/` and `public/` folders of
 * the module source that a build without `bindata` reads at run time; `STATIC_ROOT_PATH` points there).
 *
 * Two of the module's dependencies live on hosts the module proxy does not serve here
 * (`gitea.dev/sdk`, `gitlab.com/gitlab-org/api/client-go/v2`) and one is served under its old path
 * only (`gitea.dev/actions-proto-go` is `code.gitea.io/actions-proto-go`, same version, same module
 * path inside). So the writable copy is patched before the build: the two migration downloaders
 * that need the first two (repository import from Gitea and GitLab, which no test uses) are
 * removed, and the third is replaced by its old path. Every module is checked against a pinned sum.
 * Tags `sqlite sqlite_unlock_notify`. About 10-15 minutes on 2 cores, once; serialized by the build lock.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withBuildLock } from './build-lock';
import { findGo } from './s3-server';
import { BootstrapError, LOGS, TOOLS, run, runLogged, say } from './sh';

export const GITEA_MODULE = 'code.gitea.io/gitea';
export const GITEA_VERSION = 'v1.27.3';
/** The module proxy's `h1:` sum of `code.gitea.io/gitea@v1.27.3` (checked after download). */
export const GITEA_MODULE_SUM = 'h1:SRnjvw24ASELKCqyYvAWIlzwOqyFMgfD+UkqQ9SE5eU=';
/** The replacement of `gitea.dev/actions-proto-go v0.6.0` and its pinned sums (zip, go.mod). */
const ACTIONS_PROTO = {
  module: 'code.gitea.io/actions-proto-go', version: 'v0.6.0',
  sum: 'h1:JnNrve3wRTADHB0tuJf2rK0qW0GqG9NJZKTfU5aSiBQ=', goModSum: 'h1:p4RX+D9oqiEEzzkPMXscw2CmaGuYFPWFc6xIOmDNDqs=',
};
/** Source files removed before the build: the migration downloaders whose modules are not served. */
const REMOVED_SOURCES = ['services/migrations/gitea_downloader.go', 'services/migrations/gitea_downloader_test.go', 'services/migrations/gitlab.go', 'services/migrations/gitlab_test.go'];
const RUNTIME_DIRS = ['options', 'templates', 'public'] as const;
const TAGS = 'sqlite sqlite_unlock_notify';
const LOG = 'gitea-build.log';

/** The folder of a cached build: `gitea` binary and the run-time folders beside it. */
export function giteaHome(version: string = GITEA_VERSION): string {
  return join(TOOLS, `gitea-${version.replace(/^v/, '')}`);
}

/** The cached binary of a version. */
export function giteaBinary(version: string = GITEA_VERSION): string {
  return join(giteaHome(version), 'gitea');
}

function buildWorks(home: string): boolean {
  const binary = join(home, 'gitea');
  return existsSync(binary) && RUNTIME_DIRS.every((d) => existsSync(join(home, d))) && run(binary, ['--version']).status === 0;
}

interface Downloaded { Dir?: string; Sum?: string; GoModSum?: string; Error?: string }

function download(go: string, module: string, version: string, sum: string): string {
  const result = run(go, ['mod', 'download', '-json', `${module}@${version}`], { cwd: tmpdir() });
  const info = (() => {
    try {
      return JSON.parse(result.stdout) as Downloaded;
    } catch {
      return {} as Downloaded;
    }
  })();
  if (result.status !== 0 || !info.Dir) throw new BootstrapError('gitea', `go mod download ${module}@${version} failed: ${info.Error ?? result.stderr.trim()}`);
  if (info.Sum !== sum) throw new BootstrapError('gitea', `${module}@${version} has sum ${info.Sum}, expected the pinned ${sum}`);
  return info.Dir;
}

/** Patches the writable copy of the module (see the header) so it builds from what the proxy serves. */
function patchSource(go: string, work: string): void {
  for (const file of REMOVED_SOURCES) rmSync(join(work, file), { force: true });
  const edit = run(go, ['mod', 'edit', '-droprequire', 'gitea.dev/sdk', '-droprequire', 'gitlab.com/gitlab-org/api/client-go/v2',
    '-replace', `gitea.dev/actions-proto-go=${ACTIONS_PROTO.module}@${ACTIONS_PROTO.version}`], { cwd: work });
  if (edit.status !== 0) throw new BootstrapError('gitea', `go mod edit failed: ${edit.stderr.trim()}`);
  const sums = `${ACTIONS_PROTO.module} ${ACTIONS_PROTO.version} ${ACTIONS_PROTO.sum}\n${ACTIONS_PROTO.module} ${ACTIONS_PROTO.version}/go.mod ${ACTIONS_PROTO.goModSum}\n`;
  runLogged('gitea', 'sh', ['-c', `printf '%s' "$1" >> "$2"`, 'sh', sums, join(work, 'go.sum')], LOG);
}

/** Builds and caches Gitea unless the cached build of this version runs. Idempotent; fast when cached. */
export async function ensureGiteaBuild(version: string = GITEA_VERSION): Promise<string> {
  const home = giteaHome(version);
  if (buildWorks(home)) return join(home, 'gitea');
  mkdirSync(TOOLS, { recursive: true });
  mkdirSync(LOGS, { recursive: true });
  await withBuildLock(home, () => {
    if (buildWorks(home)) return;
    const go = findGo();
    if (!go) throw new BootstrapError('gitea', 'building the test forge (Gitea) needs Go >= 1.21 on PATH or in /usr/local/go/bin; install it (https://go.dev/dl/), then run the bootstrap again');
    if (version !== GITEA_VERSION) throw new BootstrapError('gitea', `only ${GITEA_VERSION} has a pinned sum here`);
    const started = Date.now();
    say(`building Gitea ${version} (the test forge) from the Go module proxy; about 10-15 minutes on 2 cores, once`);
    const moduleDir = download(go, GITEA_MODULE, version, GITEA_MODULE_SUM);
    download(go, ACTIONS_PROTO.module, ACTIONS_PROTO.version, ACTIONS_PROTO.sum);
    const work = mkdtempSync(join(tmpdir(), 'gitea-build-'));
    const partial = `${home}.partial-${process.pid}`;
    try {
      runLogged('gitea', 'cp', ['-r', `${moduleDir}/.`, work], LOG);
      runLogged('gitea', 'chmod', ['-R', 'u+w', work], LOG);
      patchSource(go, work);
      mkdirSync(partial, { recursive: true });
      const ldflags = `-s -w -X "main.Version=${version.replace(/^v/, '')}" -X "main.Tags=${TAGS}"`;
      runLogged('gitea', go, ['build', '-C', work, '-mod=mod', '-trimpath', '-tags', TAGS, '-ldflags', ldflags, '-o', join(partial, 'gitea'), '.'], LOG);
      for (const dir of RUNTIME_DIRS) cpSync(join(work, dir), join(partial, dir), { recursive: true });
      rmSync(home, { recursive: true, force: true });
      renameSync(partial, home);
    } finally {
      rmSync(work, { recursive: true, force: true });
      rmSync(partial, { recursive: true, force: true });
    }
    if (!buildWorks(home)) throw new BootstrapError('gitea', `${home}/gitea does not run after the build`, join(LOGS, LOG));
    say(`built ${home} in ${Math.round((Date.now() - started) / 1000)} s`);
  }, 'gitea');
  return join(home, 'gitea');
}
