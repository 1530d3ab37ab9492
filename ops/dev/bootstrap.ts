/**
 * Brings the development stack's backing services up, installing what is missing:
 * Debian packages, the Temporal CLI, PostgreSQL, dockerd with gVisor's runsc registered, the Temporal dev server, the
 * sandbox image, the S3 test server's binary (versitygw, built once per version), the test forge
 * (Gitea, built once per version: ops/dev/gitea.ts) and the
 * pinned coding-agent CLIs (Codex, Claude Code: ops/dev/agent-clis.ts). Idempotent; every step is skipped when already done.
 * Run through `ops/dev/bootstrap.sh` (which takes the lock and runs `npm ci`); `--tests` (from
 * `npm test`) also installs what only the tests need (Debian's Chromium for the console tests, and
 * pgAdmin 4 in a venv under `.tools/pgadmin`, the real tool behind the database-tool proxy's test:
 * ops/dev/pgadmin.ts).
 */
import { ensureAgentClis } from './agent-clis';
import { DEB_PACKAGES, ensureDebPackages, TEST_DEB_PACKAGES } from './packages';
import { ensureDockerd } from './docker-engine';
import { ensureEngineRuntime, ensureRunsc, registerIsolatingRuntime } from './container-runtimes';
import { ensurePostgres } from './postgres';
import { ensureSandboxImage } from './sandbox-image';
import { ensureVersitygwBinary } from './versitygw';
import { ensureGiteaBuild } from './gitea';
import { ensurePgadmin } from './pgadmin';
import { ensureTemporalCli, ensureTemporalServer } from './temporal-server';
import { BootstrapError, say } from './sh';

async function main(): Promise<void> {
  const started = Date.now();
  const tests = process.argv.includes('--tests');
  ensureDebPackages(tests ? [...DEB_PACKAGES, ...TEST_DEB_PACKAGES] : DEB_PACKAGES);
  ensureTemporalCli();
  await ensurePostgres();
  // Written before a dockerd start reads it; a dockerd already running reloads it (no restart).
  await ensureRunsc();
  const runtimeChanged = registerIsolatingRuntime();
  await ensureDockerd();
  await ensureEngineRuntime(runtimeChanged);
  await ensureTemporalServer();
  // The real coding-agent CLIs (issue 26), fetched once per pinned version: the tests run them,
  // and the sandbox image carries them.
  await ensureAgentClis();
  ensureSandboxImage();
  // The tests' S3 server (and npm start's with OBJECT_STORE_BACKEND=s3); started where needed.
  await ensureVersitygwBinary();
  // The tests' forge (docs/forges.md); started per test process by test/support/gitea.ts.
  await ensureGiteaBuild();
  // The database-tool proxy's test runs the real pgAdmin (started per test process); once per version.
  if (tests) await ensurePgadmin();
  say(`services ready in ${((Date.now() - started) / 1000).toFixed(1)} s (postgres 127.0.0.1:5432, dockerd, temporal 127.0.0.1:7233, UI http://127.0.0.1:8233)`);
}

main().catch((err: unknown) => {
  if (err instanceof BootstrapError) console.error(`[bootstrap] FAILED ${err.message}`);
  else console.error('[bootstrap] FAILED', err);
  process.exit(1);
});
