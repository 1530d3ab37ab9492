/**
 * `npm run record:histories`: runs every case of history-cases.ts to completion on the real
 * stack (PostgreSQL, Temporal dev server, Docker, gateway + fake upstream, API, in-process
 * control worker and host runner), then replaces `test/fixtures/workflow-histories/*.json`
 * with their histories. The only writer of that folder (docs/workflow-replay.md). Uses the
 * Temporal server at `TEMPORAL_ADDRESS` when set (the dev stack's 127.0.0.1:7233), otherwise
 * starts a local dev server as the tests do. Nothing is written unless every case succeeded.
 * `-- --only <case>` (a case function's name, e.g. `sandboxGroupLifecycle`) runs that case alone
 * and writes only its files, leaving every other history as it is (a new workflow or case).
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startAgentStack } from './agent-stack';
import { removeContainers } from './docker';
import { HISTORY_CASES, RECORDING_ENV, type RecordedRun } from './history-cases';
import { teardownTemporal } from './temporal';
import { teardownGitea } from './gitea';
import { HISTORY_DIR, historyFileText, workflowTypeOf } from './workflow-histories';

/** The case named after `--only`, or every case. */
function selectedCases(): typeof HISTORY_CASES {
  const at = process.argv.indexOf('--only');
  if (at === -1) return HISTORY_CASES;
  const name = process.argv[at + 1];
  const chosen = HISTORY_CASES.filter((c) => c.name === name);
  if (chosen.length === 0) throw new Error(`--only ${name ?? ''}: no such case (${HISTORY_CASES.map((c) => c.name).join(', ')})`);
  return chosen;
}

async function main(): Promise<void> {
  const cases = selectedCases();
  const partial = cases !== HISTORY_CASES;
  const stack = await startAgentStack({ env: RECORDING_ENV });
  const runs: RecordedRun[] = [];
  try {
    stack.upstream.setDefault(undefined);
    for (const record of cases) {
      const recorded = await record(stack);
      for (const run of recorded) console.log(`recorded ${run.name} (${workflowTypeOf(run.history)}, ${run.history.events?.length ?? 0} events)`);
      runs.push(...recorded);
    }
  } finally {
    await stack.close();
    await teardownTemporal();
    await teardownGitea();
    await removeContainers().catch(() => 0);
  }
  const names = runs.map((r) => r.name);
  if (new Set(names).size !== names.length) throw new Error(`two cases share a name: ${names.join(', ')}`);
  mkdirSync(HISTORY_DIR, { recursive: true });
  if (!partial) for (const file of readdirSync(HISTORY_DIR).filter((f) => f.endsWith('.json'))) rmSync(join(HISTORY_DIR, file));
  for (const run of runs) writeFileSync(join(HISTORY_DIR, `${run.name}.json`), historyFileText(run.history));
  console.log(`wrote ${runs.length} histories to ${relative(process.cwd(), HISTORY_DIR)}`);
}

main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
