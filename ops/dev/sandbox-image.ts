/**
 * The sandbox base image `agent-sandbox:base`: a Debian minbase rootfs (bash, git,
 * ca-certificates, python3) made with debootstrap and brought in with `docker import`, since no
 * image registry is reachable. Skipped when the image with the current recipe version exists.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BootstrapError, DATA, LOGS, run, runLogged, say } from './sh';

export const SANDBOX_IMAGE = 'agent-sandbox:base';
/** Bump when the recipe changes: an image with another version is rebuilt. */
export const SANDBOX_IMAGE_VERSION = '1';
const PACKAGES = ['bash', 'git', 'ca-certificates', 'python3'];
const LOG_FILE = join(LOGS, 'sandbox-image.log');

function currentVersion(): string | undefined {
  const result = run('docker', ['image', 'inspect', SANDBOX_IMAGE, '--format', '{{ index .Config.Labels "agent-sandbox.version" }}']);
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The Debian mirror apt already uses (deb822 or one-line sources), else the public default. */
export function debianMirror(): string {
  const deb822 = '/etc/apt/sources.list.d/debian.sources';
  if (existsSync(deb822)) {
    const uri = /^URIs:\s*(\S+)/m.exec(readFileSync(deb822, 'utf8'))?.[1];
    if (uri && !uri.includes('security')) return uri;
  }
  if (existsSync('/etc/apt/sources.list')) {
    const line = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+\s+main/m.exec(readFileSync('/etc/apt/sources.list', 'utf8'));
    if (line?.[1] && !line[1].includes('security')) return line[1];
  }
  return 'http://deb.debian.org/debian';
}

function debianSuite(): string {
  const osRelease = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '';
  return /^VERSION_CODENAME=(\w+)/m.exec(osRelease)?.[1] ?? 'bookworm';
}

export function ensureSandboxImage(): void {
  if (currentVersion() === SANDBOX_IMAGE_VERSION) return;
  const rootfs = join(DATA, 'sandbox-rootfs');
  const mirror = debianMirror();
  const suite = debianSuite();
  say(`building ${SANDBOX_IMAGE} (debootstrap ${suite} from ${mirror}; about a minute)`);
  rmSync(rootfs, { recursive: true, force: true });
  try {
    runLogged('sandbox-image', 'debootstrap', ['--variant=minbase', `--include=${PACKAGES.join(',')}`, suite, rootfs, mirror], 'sandbox-image.log', { asRoot: true });
    runLogged('sandbox-image', 'bash', ['-c', [
      'set -euo pipefail',
      `rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/tmp/*`,
      `mkdir -p "${rootfs}/workspace"`,
      `tar -C "${rootfs}" -c . | docker import`
        + ` --change 'LABEL agent-sandbox.version=${SANDBOX_IMAGE_VERSION}'`
        + ` --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'`
        + ` --change 'ENV LANG=C.UTF-8'`
        + ` --change 'WORKDIR /workspace'`
        + ` --change 'CMD ["/bin/bash"]' - ${SANDBOX_IMAGE}`,
    ].join('\n')], 'sandbox-image.log', { asRoot: true });
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
  }
  if (currentVersion() !== SANDBOX_IMAGE_VERSION) throw new BootstrapError('sandbox-image', `${SANDBOX_IMAGE} missing after import`, LOG_FILE);
}
