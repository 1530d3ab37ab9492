/**
 * Every router of the control-plane API, in the order they are mounted.
 */
import { adminIdentityRouter } from './admin-identity';
import type Router from '@koa/router';
import type { ApiDeps } from '../deps';
import { apiHealthRouter } from './health';
import { hostGrantRouter } from './grants';
import { hostsRouter } from './hosts';
import { hostInventoryRouter } from './host-inventory';
import { jobsRouter } from './jobs';
import { chatDeletionRouter } from './chat-deletion';
import { ownerVariablesRouter } from './owner-variables';
import { ownerUsageRouter } from './owner-usage';
import { ownerRunUsageRouter } from './owner-run-usage';
import { hostAttemptsRouter } from './host-attempts';
import { adminHostsRouter } from './admin-hosts';
import { adminServersRouter } from './admin-servers';
import { adminAuditLogRouter } from './admin-audit-log';
import { adminConsoleInfoRouter } from './admin-console-info';
import { adminEventContentRouter } from './admin-event-content';
import { adminSettingsRouter } from './admin-settings';
import { adminHostSettingsRouter } from './admin-host-settings';
import { adminDatabaseToolRouter } from './admin-database-tool';
import { adminDatabaseBrowserRouter } from './admin-database-browser';
import { adminSandboxesRouter } from './admin-sandboxes';
import { adminSandboxBatchRouter } from './admin-sandbox-batch';
import { promptRewriteRouter } from './prompt-rewrite';
import { agentEventsRouter } from './agent-events';
import { nativeQuestionsRouter } from './native-questions';
import { workspaceArchiveRouter } from './workspace-archive';
import { sourceControlRouter } from './source-control';
import { mcpConnectionsRouter } from './mcp-connections';
import { mcpOAuthRouter } from './mcp-oauth';
import { mcpChatRouter } from './mcp-chat';
import { mcpConnectorsRouter } from './mcp-connectors';
import { mcpRelayRouter } from './mcp-relay';
import { hostToolCredentialsRouter } from './host-tool-credentials';
import { metricsRouter } from './metrics';
import { sshKeysRouter } from './ssh-keys';
import { hostSshRouter } from './host-ssh';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- routers carry their own state types
export function apiRouters(deps: ApiDeps): Array<Router<any>> {
  return [
    apiHealthRouter(deps),
    hostsRouter(deps),
    hostInventoryRouter(deps),
    jobsRouter(deps),
    chatDeletionRouter(deps),
    ownerVariablesRouter(deps),
    ownerUsageRouter(deps),
    ownerRunUsageRouter(deps),
    hostAttemptsRouter(deps),
    adminHostsRouter(deps),
    adminServersRouter(deps),
    adminIdentityRouter(deps),
    adminAuditLogRouter(deps),
    adminConsoleInfoRouter(deps),
    adminEventContentRouter(deps),
    adminSettingsRouter(deps),
    adminHostSettingsRouter(deps),
    adminDatabaseToolRouter(deps),
    adminDatabaseBrowserRouter(deps),
    adminSandboxesRouter(deps),
    adminSandboxBatchRouter(deps),
    hostGrantRouter(deps),
    promptRewriteRouter(deps),
    agentEventsRouter(deps),
    nativeQuestionsRouter(deps),
    workspaceArchiveRouter(deps),
    sourceControlRouter(deps),
    mcpConnectionsRouter(deps),
    mcpOAuthRouter(deps),
    mcpChatRouter(deps),
    mcpConnectorsRouter(deps),
    mcpRelayRouter(deps),
    hostToolCredentialsRouter(deps),
    sshKeysRouter(deps),
    hostSshRouter(deps),
    metricsRouter(deps),
  ];
}
