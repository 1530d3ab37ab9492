/**
 * Running executions survive a deploy: every recorded history (test/fixtures/workflow-histories,
 * docs/workflow-replay.md) replays against the current workflow code, bundled from
 * workflows/index.ts as the workers load it. A change that would break an execution in flight
 * (a command added, removed or reordered before the point a history reached, without
 * `patched()`) fails here, naming the history and the nondeterminism error. The folder may not
 * be empty, and every workflow the control worker registers needs at least one history.
 * Replay needs no Temporal server.
 */
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { WORKFLOW_TYPES } from '../../../workflows/definitions/workflow-types';
import { installTestRuntime, workflowBundle } from '../../support/temporal';
import { HISTORY_DIR, readHistories } from '../../support/workflow-histories';

/** Workflow types the control worker registers (WORKFLOW_TYPES equals the exports of workflows/index.ts: test/unit/workflow-types.test.ts). */
const registered: string[] = [...WORKFLOW_TYPES].sort();

describe('workflow history replay (recorded histories against the current workflows)', () => {
  const histories = readHistories();
  /** Replay outcome per history file: undefined when it replayed cleanly. */
  const outcomes = new Map<string, string | undefined>();

  before(async () => {
    if (histories.length === 0) return;
    installTestRuntime();
    const results = Worker.runReplayHistories(
      { workflowBundle: await workflowBundle() },
      histories.map((h) => ({ workflowId: h.file, history: h.history })),
    );
    for await (const result of results) {
      outcomes.set(result.workflowId, result.error ? `${result.error.name}: ${result.error.message}` : undefined);
    }
  });

  it('has recorded histories to replay', () => {
    assert.ok(histories.length > 0, `no history in ${HISTORY_DIR}: run npm run record:histories`);
  });

  it('has a history of every workflow the control worker registers, and none of another', () => {
    assert.ok(registered.length >= 5, `workflows/index.ts exports ${registered.join(', ')}`);
    const recorded = new Set(histories.map((h) => h.workflowType));
    assert.deepEqual(registered.filter((name) => !recorded.has(name)), [], 'workflows without a recorded history (add a case to test/support/history-cases.ts)');
    assert.deepEqual([...recorded].filter((name) => !registered.includes(name)).sort(), [], 'histories of workflows no longer registered');
  });

  for (const { file, workflowType } of histories) {
    it(`replays ${file} (${workflowType}) without nondeterminism`, () => {
      assert.ok(outcomes.has(file), `${file} was not replayed`);
      const error = outcomes.get(file);
      if (error !== undefined) assert.fail(`${file} no longer replays: ${error}`);
    });
  }
});
