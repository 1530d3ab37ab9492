/**
 * Links to the Temporal UI: every chat, sandbox group and host has its own workflow, and operators
 * follow a link from the console to it. The workflow ids mirror the server's builders in
 * workflows/definitions/ (`chatWorkflowId` in chat.ts, `sandboxGroupWorkflowId` in
 * sandbox-group.ts, `hostWorkflowId` in host.ts): the console cannot import them (it talks HTTP
 * only), so test/unit/console/temporal-ids.test.ts checks these copies against them. Pure
 * functions, no DOM: the link component is in ./temporal-link.tsx.
 */

/** Workflow id of a chat (workflows/definitions/chat.ts `chatWorkflowId`). */
export function chatWorkflowId(jobId: string): string {
  return `chat:${jobId}`;
}

/** Workflow id of a sandbox group (workflows/definitions/sandbox-group.ts `sandboxGroupWorkflowId`). */
export function sandboxGroupWorkflowId(groupId: string): string {
  return `sandbox:${groupId}`;
}

/** Workflow id of an execution host (workflows/definitions/host.ts `hostWorkflowId`). */
export function hostWorkflowId(hostId: string): string {
  return `host:${hostId}`;
}

/** What `GET /admin/agent/console-info` answers. */
export interface ConsoleInfo {
  temporal_ui_url: string;
  temporal_namespace: string;
}

/** The Temporal UI page of a workflow: `<ui>/namespaces/<ns>/workflows/<workflowId>` (each segment encoded). */
export function temporalWorkflowUrl(info: ConsoleInfo, workflowId: string): string {
  return `${info.temporal_ui_url.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(info.temporal_namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
