/**
 * The sandbox base image `agent-sandbox:base`: a Debian minbase rootfs (bash, git,
 * ca-certificates, python3, socat) made with debootstrap and brought in with `docker import`, since
 * no image registry is reachable. It carries the pinned coding-agent CLIs (`codex`, `claude`, with
 * Codex's `rg`; ops/dev/agent-clis.ts, fetched first) in /usr/local/bin and the model relay's
 * forwarder `agent-relay-run` (docs/agent-drivers.md). Skipped when the image with the current
 * recipe version exists.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { agentCliBinary } from './agent-clis';
import { BootstrapError, DATA, LOGS, run, runLogged, say } from './sh';

export const SANDBOX_IMAGE = 'agent-sandbox:base';
/** Bump when the recipe changes: an image with another version is rebuilt. */
export const SANDBOX_IMAGE_VERSION = '2';
const PACKAGES = ['bash', 'git', 'ca-certificates', 'python3', 'socat'];

/**
 * `agent-relay-run <socket> <port> <command…>`: serves the member's relay socket on
 * 127.0.0.1:<port> (socat) for as long as the command runs, and exits with the command's status.
 * 97 when the socket is missing or the forwarder does not listen.
 */
export const RELAY_RUN_SCRIPT = `#!/bin/bash
set -u
sock="$1"; port="$2"; shift 2
if [ ! -S "$sock" ]; then echo "agent-relay-run: the model relay socket $sock is missing" >&2; exit 97; fi
socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$sock" &
relay=$!
trap 'kill "$relay" 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  if ! kill -0 "$relay" 2>/dev/null; then echo "agent-relay-run: the forwarder on port $port did not start" >&2; exit 97; fi
  sleep 0.05
done
"$@"
`;
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
  for (const cli of ['codex', 'claude-code'] as const) {
    if (!existsSync(agentCliBinary(cli))) throw new BootstrapError('sandbox-image', `${agentCliBinary(cli)} is missing: fetch the CLIs first (npx tsx ops/dev/agent-clis.ts)`);
  }
  const rootfs = join(DATA, 'sandbox-rootfs');
  const mirror = debianMirror();
  const suite = debianSuite();
  say(`building ${SANDBOX_IMAGE} (debootstrap ${suite} from ${mirror}; a few minutes with the CLIs)`);
  rmSync(rootfs, { recursive: true, force: true });
  try {
    runLogged('sandbox-image', 'debootstrap', ['--variant=minbase', `--include=${PACKAGES.join(',')}`, suite, rootfs, mirror], 'sandbox-image.log', { asRoot: true });
    runLogged('sandbox-image', 'bash', ['-c', [
      'set -euo pipefail',
      `rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/tmp/*`,
      `mkdir -p "${rootfs}/workspace" "${rootfs}/run/agent-relay"`,
      `install -m 0755 "${agentCliBinary('codex')}" "${rootfs}/usr/local/bin/codex"`,
      `install -m 0755 "${join(dirname(dirname(agentCliBinary('codex'))), 'codex-path', 'rg')}" "${rootfs}/usr/local/bin/rg"`,
      `install -m 0755 "${agentCliBinary('claude-code')}" "${rootfs}/usr/local/bin/claude"`,
      `cat > "${rootfs}/usr/local/bin/agent-relay-run" <<'RELAY_RUN'\n${RELAY_RUN_SCRIPT}RELAY_RUN`,
      `chmod 0755 "${rootfs}/usr/local/bin/agent-relay-run"`,
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
