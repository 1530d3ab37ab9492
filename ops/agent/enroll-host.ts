/**
 * Operator script: enroll an execution host (or rotate its credential).
 * `npm run enroll-host -- --host <id>` prints the credential once; give it to that host's runner
 * as `AGENT_HOST_CREDENTIAL`. Only its SHA-256 digest is stored. Run on the host itself, it also
 * runs the runtime preflight against the local Docker engine and says which execution profiles the
 * host will attest, and why not (docs/execution-profiles.md); the runner repeats it at every start,
 * and only the runner's report counts. `--no-preflight` skips it.
 */
import { parseArgs } from 'node:util';
import { createDb } from '../../lib/db';
import Docker from 'dockerode';
import { loadSettings, type Settings } from '../../lib/settings';
import { runPreflight, type Preflight } from '../../activities/docker/runtime-preflight';
import { runtimesFromSettings } from '../../activities/docker/container-runtime';
import { enrollHost } from '../../agent/hosts/host-registry';
import { DEV_DATABASE_URL } from '../dev/postgres';

/** The preflight of this machine's engine with the runner's runtime settings, or null when no engine answers. */
async function localPreflight(settings: Settings): Promise<Preflight | null> {
  const docker = new Docker({ socketPath: settings.DOCKER_SOCKET_PATH });
  if (!(await docker.ping().then(() => true, () => false))) return null;
  return runPreflight({
    docker, image: settings.AGENT_SANDBOX_IMAGE,
    runtimes: runtimesFromSettings(settings),
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { host: { type: 'string' }, json: { type: 'boolean', default: false }, 'no-preflight': { type: 'boolean', default: false } } });
  if (!values.host) throw new Error('usage: enroll-host --host <id> [--json]');
  const settings = loadSettings(process.env);
  const db = createDb({ url: settings.DATABASE_URL ?? DEV_DATABASE_URL, applicationName: 'enroll-host' });
  try {
    const enrolled = await enrollHost(db, values.host);
    const preflight = values['no-preflight'] ? undefined : await localPreflight(settings);
    if (values.json) console.log(JSON.stringify({ host_id: enrolled.hostId, credential: enrolled.credential, ...(preflight ? { preflight } : {}) }));
    else {
      console.log(`Enrolled host ${enrolled.hostId}. Credential (shown once):\n${enrolled.credential}`);
      if (preflight === null) console.log('No local Docker engine answered: the host runner runs its runtime preflight when it starts.');
      else if (preflight) {
        console.log(`Runtime preflight (host kernel ${preflight.host_kernel}): attests ${preflight.attestations.join(', ') || 'nothing'}`);
        for (const [profile, why] of Object.entries(preflight.refused)) console.log(`  not ${profile}: ${why}`);
      }
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
