/**
 * Every workflow type the control worker registers, for code that must name them all without
 * loading workflow code (replay tests, operator tooling). test/unit/workflow-types.test.ts proves
 * this list is exactly the exports of `workflows/index.ts`.
 */
import { CHAT_WORKFLOW_TYPE } from './chat';
import { DELETION_SWEEP_WORKFLOW_TYPE } from './deletion-sweep';
import { GRANT_WORKFLOW_TYPE } from './grant';
import { HOST_WORKFLOW_TYPE } from './host';
import { HOST_SELF_CHECK_WORKFLOW_TYPE } from './host-self-check';
import { IDLE_SANDBOX_STOP_WORKFLOW_TYPE } from './idle-sandbox-stop';
import { PUBLIC_STATS_WORKFLOW_TYPE } from './public-stats';
import { PUBLISH_WORKFLOW_TYPE } from './publish';
import { SANDBOX_GROUP_WORKFLOW_TYPE } from './sandbox-group';
import { TITLE_WORKFLOW_TYPE } from './title';
import { WORKSPACE_ARCHIVE_WORKFLOW_TYPE } from './workspace-archive';

export const WORKFLOW_TYPES = [
  CHAT_WORKFLOW_TYPE, GRANT_WORKFLOW_TYPE, HOST_SELF_CHECK_WORKFLOW_TYPE, TITLE_WORKFLOW_TYPE, WORKSPACE_ARCHIVE_WORKFLOW_TYPE,
  SANDBOX_GROUP_WORKFLOW_TYPE, HOST_WORKFLOW_TYPE, DELETION_SWEEP_WORKFLOW_TYPE, IDLE_SANDBOX_STOP_WORKFLOW_TYPE,
  PUBLISH_WORKFLOW_TYPE, PUBLIC_STATS_WORKFLOW_TYPE,
] as const;

export type WorkflowType = (typeof WORKFLOW_TYPES)[number];
