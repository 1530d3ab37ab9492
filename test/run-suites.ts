/**
 * `npm run test:all`: every suite once under the default sandbox runtime (gVisor's runsc, what
 * `untrusted-vm-v1` work gets), then the suites that run sandboxes again under runc
 * (`AGENT_TEST_RUNTIME=runc`; docs/execution-profiles.md), so the drivers, workspace operations,
 * archives and restores are proven under both runtimes. Ends with one closing line adding both
 * runs up, and fails when either failed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ALL = ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'];

/** The suites whose sandboxes follow `AGENT_TEST_RUNTIME` (the containment suite covers both runtimes itself). */
export const SANDBOX_SUITES = [
  'test/integration/docker-sandbox.test.ts',
  'test/integration/docker-sandbox-exec.test.ts',
  'test/integration/sandbox-container.test.ts',
  'test/integration/sandbox-activities.test.ts',
  'test/integration/sandbox-archive.test.ts',
  'test/integration/sandbox-lifecycle-docker.test.ts',
  'test/integration/workspace-init.test.ts',
  'test/integration/workspace-archive.test.ts',
  'test/integration/agent-chat.test.ts',
  'test/integration/agent-builtin-driver.test.ts',
  'test/integration/agent-cli-driver.test.ts',
  'test/integration/agent-native-drivers.test.ts',
  'test/integration/agent-codex-questions.test.ts',
];

function mocha(files: readonly string[], env: NodeJS.ProcessEnv): number {
  const result = spawnSync('npx', ['mocha', ...files], { stdio: 'inherit', env });
  return result.status ?? 1;
}

const dir = mkdtempSync(join(tmpdir(), 'mocha-summary-'));
const summary = join(dir, 'runs.jsonl');
try {
  const first = mocha(process.argv.length > 2 ? process.argv.slice(2) : ALL, { ...process.env, MOCHA_SUMMARY_FILE: summary });
  const second = mocha(SANDBOX_SUITES, { ...process.env, MOCHA_SUMMARY_FILE: summary, AGENT_TEST_RUNTIME: 'runc' });
  const runs = readFileSync(summary, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { passed: number; failed: number; skipped: number });
  const total = runs.reduce((a, r) => ({ passed: a.passed + r.passed, failed: a.failed + r.failed, skipped: a.skipped + r.skipped }), { passed: 0, failed: 0, skipped: 0 });
  process.stdout.write(`\nAll runs (runsc, then the sandbox suites under runc): ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`);
  process.stdout.write(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`);
  process.exitCode = first !== 0 || second !== 0 || runs.length < 2 ? 1 : 0;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
