/**
 * Workflows are started by their type name from the definitions modules, with the function's type
 * for the compiler. The worker registers each workflow under its export name in
 * `workflows/index.ts`; these checks prove every constant spells that name and every exported
 * function carries it, so a start by constant reaches the registered workflow.
 */
import assert from 'node:assert/strict';
// The one runtime import of workflow implementations outside workflows/: reading `.name` needs the
// functions themselves (exempted, with this reason, in workflow-import-fence.test.ts).
import * as workflows from '../../workflows';
import { CHAT_WORKFLOW_TYPE } from '../../workflows/definitions/chat';
import { GRANT_WORKFLOW_TYPE } from '../../workflows/definitions/grant';
import { HOST_SELF_CHECK_WORKFLOW_TYPE } from '../../workflows/definitions/host-self-check';
import { TITLE_WORKFLOW_TYPE } from '../../workflows/definitions/title';
import { WORKFLOW_TYPES, type WorkflowType } from '../../workflows/definitions/workflow-types';
import { WORKSPACE_ARCHIVE_WORKFLOW_TYPE } from '../../workflows/definitions/workspace-archive';
import { SANDBOX_GROUP_WORKFLOW_TYPE } from '../../workflows/definitions/sandbox-group';
import { HOST_WORKFLOW_TYPE } from '../../workflows/definitions/host';
import { DELETION_SWEEP_WORKFLOW_TYPE } from '../../workflows/definitions/deletion-sweep';
import { IDLE_SANDBOX_STOP_WORKFLOW_TYPE } from '../../workflows/definitions/idle-sandbox-stop';
import { PUBLISH_WORKFLOW_TYPE } from '../../workflows/definitions/publish';
import { PUBLIC_STATS_WORKFLOW_TYPE } from '../../workflows/definitions/public-stats';

type Exported = keyof typeof workflows;

/**
 * Compile-time half: one entry per export of `workflows/index.ts` (a missing or extra workflow
 * fails to compile) whose constant's literal type is that export's name.
 */
const CONSTANTS: { readonly [Name in Exported]: Name } = {
  chatWorkflow: CHAT_WORKFLOW_TYPE,
  grantWorkflow: GRANT_WORKFLOW_TYPE,
  hostSelfCheck: HOST_SELF_CHECK_WORKFLOW_TYPE,
  titleWorkflow: TITLE_WORKFLOW_TYPE,
  workspaceArchive: WORKSPACE_ARCHIVE_WORKFLOW_TYPE,
  sandboxGroupWorkflow: SANDBOX_GROUP_WORKFLOW_TYPE,
  hostWorkflow: HOST_WORKFLOW_TYPE,
  deletionSweepWorkflow: DELETION_SWEEP_WORKFLOW_TYPE,
  idleSandboxStopWorkflow: IDLE_SANDBOX_STOP_WORKFLOW_TYPE,
  publishWorkflow: PUBLISH_WORKFLOW_TYPE,
  publicStatsWorkflow: PUBLIC_STATS_WORKFLOW_TYPE,
};
/** `WORKFLOW_TYPES` names exactly the exports, both ways. */
const sameNames: [Exported] extends [WorkflowType] ? ([WorkflowType] extends [Exported] ? true : false) : false = true;

describe('workflow type names', () => {
  it('each workflow exported from workflows/index.ts has a definitions constant equal to its export name and function name', () => {
    assert.equal(sameNames, true);
    const exported = Object.entries(workflows);
    assert.deepEqual(exported.map(([name]) => name).sort(), Object.keys(CONSTANTS).sort());
    assert.deepEqual([...WORKFLOW_TYPES].sort(), Object.keys(CONSTANTS).sort());
    for (const [exportName, fn] of exported) {
      assert.equal(typeof fn, 'function', exportName);
      // The client derives the type from `fn.name` when given a function (startChild in workflows).
      assert.equal(fn.name, exportName, `workflow function ${fn.name} is exported as ${exportName}`);
      assert.equal(CONSTANTS[exportName as Exported], exportName);
    }
  });
});
