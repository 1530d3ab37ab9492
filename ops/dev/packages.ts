/**
 * Debian packages the dev stack needs, installed when missing (apt lists refreshed once).
 */
import { BootstrapError, run, runLogged, say } from './sh';

/** Packages the stack installs: the database, the container engine, the rootfs builder, flock (gVisor's runsc: container-runtimes.ts). */
export const DEB_PACKAGES = ['postgresql', 'docker.io', 'debootstrap', 'util-linux'] as const;

/**
 * What only the tests need (`npm test` runs the bootstrap with `--tests`): Debian's Chromium, which
 * the console tests drive through playwright-core (no browser is ever downloaded by a tool), and a
 * font for its text; python3-venv for the pgAdmin 4 venv of the database-tool proxy's test (ops/dev/pgadmin.ts);
 * HAProxy for the cluster shape's tests (`npm run cluster` installs it itself when missing).
 */
export const TEST_DEB_PACKAGES = ['chromium', 'fonts-dejavu-core', 'python3-venv', 'haproxy'] as const;

function installed(pkg: string): boolean {
  const result = run('dpkg-query', ['-W', '-f=${Status}', pkg]);
  return result.status === 0 && result.stdout.includes('install ok installed');
}

export function ensureDebPackages(packages: readonly string[] = DEB_PACKAGES): void {
  const missing = packages.filter((p) => !installed(p));
  if (missing.length === 0) return;
  say(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  runLogged('apt', 'apt-get', ['update'], 'apt.log', { asRoot: true, env });
  runLogged('apt', 'apt-get', ['install', '-y', '--no-install-recommends', ...missing], 'apt.log', { asRoot: true, env });
  const still = missing.filter((p) => !installed(p));
  if (still.length) throw new BootstrapError('apt', `packages still missing after install: ${still.join(' ')}`);
}
