/**
 * The isolating runtime of `untrusted-vm-v1` sandboxes (docs/execution-profiles.md "Runtimes"):
 * Debian's `runsc` (gVisor) registered with Docker as runtime `runsc` in `/etc/docker/daemon.json`,
 * next to the engine's own `runc` (kept for `trusted-v1`).
 *
 * The package is Debian's build of gVisor 2024-07 (`RUNSC_DEB`, from the distribution after
 * bookworm; a static binary with no dependencies), fetched from the machine's own Debian mirror,
 * checked against its pinned SHA-256 and installed with dpkg. Bookworm's own build (2022-12)
 * cannot run bookworm's userland: its `statx` refuses `AT_NO_AUTOMOUNT`, so `ls` and `stat` fail,
 * and a member's `kill -9 -1` ends the whole sandbox.
 * Other keys of an existing daemon.json are kept. A running `dockerd` reloads its runtimes on
 * SIGHUP (no restart: running containers are untouched); the bootstrap then waits until the
 * engine lists the runtime.
 *
 * gVisor's flags: `--network=none` (the sandbox gets no network stack but loopback; the engine's
 * own network namespace is not used), `--host-uds=open` (a sandbox may connect to the model
 * relay's Unix socket mounted into it: docs/agent-drivers.md "Model relay") and `--overlay2=none`
 * (the root filesystem's writes go to the container's own layer on the host, as with runc, so a
 * stopped sandbox keeps them and an archive reads them; gVisor's default keeps them in memory).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { request } from 'node:http';
import { BootstrapError, isRoot, run, runLogged, say, TOOLS, waitFor } from './sh';
import { DOCKER_SOCKET } from './docker-engine';

export const DAEMON_JSON = '/etc/docker/daemon.json';
export const ISOLATING_RUNTIME = 'runsc';
export const RUNSC_PATH = '/usr/bin/runsc';
export const RUNSC_ARGS = ['--network=none', '--host-uds=open', '--overlay2=none'];

/** The pinned package: its version, its path in the Debian archive, its SHA-256. */
export const RUNSC_DEB = {
  version: '0.0~20240729.0-4+b7',
  path: 'pool/main/g/golang-gvisor-gvisor/runsc_0.0~20240729.0-4+b7_amd64.deb',
  sha256: '3c25a5130dfac2f71237d5baad56ac86a255de87a0400f11b36a555156dc325a',
} as const;

/** The first Debian mirror apt is configured with (deb822 `URIs:` or a one-line `deb` entry). */
export function debianMirror(): string {
  for (const file of ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const uri = /^URIs:\s*(\S+)/m.exec(text)?.[1] ?? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+\s+main/m.exec(text)?.[1];
    if (uri) return uri.replace(/\/+$/, '');
  }
  throw new BootstrapError('runsc', 'no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list');
}

/** Installs the pinned runsc package unless that version is installed. */
export async function ensureRunsc(): Promise<void> {
  const installed = run('dpkg-query', ['-W', '-f=${Version}', 'runsc']);
  if (installed.status === 0 && installed.stdout.trim() === RUNSC_DEB.version) return;
  const url = `${debianMirror()}/${RUNSC_DEB.path}`;
  say(`installing gVisor's runsc ${RUNSC_DEB.version} (Debian package, about 7 MB)`);
  const response = await fetch(url);
  if (!response.ok) throw new BootstrapError('runsc', `fetching ${url} answered ${response.status}`);
  const bytes = Buffer.from(await response.arrayBuffer());
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (digest !== RUNSC_DEB.sha256) throw new BootstrapError('runsc', `${url} has SHA-256 ${digest}, expected ${RUNSC_DEB.sha256}`);
  mkdirSync(TOOLS, { recursive: true });
  const file = join(TOOLS, 'runsc.deb');
  writeFileSync(file, bytes);
  runLogged('runsc', 'dpkg', ['-i', file], 'apt.log', { asRoot: true });
  rmSync(file, { force: true });
}

interface DaemonConfig {
  runtimes?: Record<string, { path: string; runtimeArgs?: string[] }>;
  [key: string]: unknown;
}

/** Writes the runtime into daemon.json when it is missing or different; true when the file changed. */
export function registerIsolatingRuntime(file = DAEMON_JSON): boolean {
  if (!existsSync(RUNSC_PATH)) throw new BootstrapError('runsc', `${RUNSC_PATH} is missing although the runsc package is installed`);
  let config: DaemonConfig = {};
  if (existsSync(file)) {
    try {
      config = JSON.parse(readFileSync(file, 'utf8')) as DaemonConfig;
    } catch (err) {
      throw new BootstrapError('runsc', `${file} is not valid JSON (${(err as Error).message}); fix it, then run again`);
    }
  }
  const wanted = { path: RUNSC_PATH, runtimeArgs: RUNSC_ARGS };
  if (JSON.stringify(config.runtimes?.[ISOLATING_RUNTIME]) === JSON.stringify(wanted)) return false;
  config.runtimes = { ...config.runtimes, [ISOLATING_RUNTIME]: wanted };
  const text = `${JSON.stringify(config, null, 2)}\n`;
  if (isRoot) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  } else {
    run('mkdir', ['-p', dirname(file)], { asRoot: true });
    const wrote = run('tee', [file], { asRoot: true, input: text, stdio: ['pipe', 'ignore', 'pipe'] });
    if (wrote.status !== 0) throw new BootstrapError('runsc', `writing ${file} failed: ${wrote.stderr.trim()}`);
  }
  say(`registered the isolating runtime ${ISOLATING_RUNTIME} (${RUNSC_PATH}) in ${file}`);
  return true;
}

/** The runtime names the engine lists (`GET /info`), or [] when it does not answer. */
export function engineRuntimes(socketPath = DOCKER_SOCKET): Promise<string[]> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/info', method: 'GET', timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => {
        try {
          resolve(Object.keys((JSON.parse(body) as { Runtimes?: Record<string, unknown> }).Runtimes ?? {}));
        } catch {
          resolve([]);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve([]));
    req.end();
  });
}

/** Makes the running engine use the registered runtime: SIGHUP (a reload, not a restart) when daemon.json changed or the engine does not list it. */
export async function ensureEngineRuntime(configChanged: boolean): Promise<void> {
  if (!configChanged && (await engineRuntimes()).includes(ISOLATING_RUNTIME)) return;
  const pid = existsSync('/var/run/docker.pid') ? readFileSync('/var/run/docker.pid', 'utf8').trim() : run('pidof', ['dockerd']).stdout.trim().split(/\s+/)[0];
  if (!pid) throw new BootstrapError('runsc', 'dockerd is running but its pid is unknown: restart it to load the runsc runtime');
  say(`reloading dockerd's runtimes (SIGHUP to ${pid})`);
  const hup = run('kill', ['-HUP', pid], { asRoot: true });
  if (hup.status !== 0) throw new BootstrapError('runsc', `kill -HUP ${pid} failed: ${hup.stderr.trim()}`);
  await waitFor('runsc', async () => (await engineRuntimes()).includes(ISOLATING_RUNTIME), { timeoutMs: 30_000, what: `dockerd to list the ${ISOLATING_RUNTIME} runtime` });
}
