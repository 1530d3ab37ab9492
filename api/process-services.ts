/**
 * The API process's long-lived services a route needs, one per process, created on first use when
 * the composition root (api/main.ts) passed none in: a module of their own so routes reach them
 * without importing the app module that mounts them.
 */
import { McpSessionPool } from '../agent/tools/mcp-sessions';
import { SourceControlApp } from '../agent/jobs/source-control-app';
import type { ApiDeps } from './deps';
import { ApiMetrics } from './metrics/api-metrics';

/** The process's source-control app (job creation's 503, repo tokens): one per process, so its key is loaded and retried in one place. */
export function sourceControlAppOf(deps: ApiDeps): SourceControlApp {
  deps.sourceControlApp ??= new SourceControlApp(deps.settings, deps.log);
  return deps.sourceControlApp;
}

/** A tool relay's MCP session pool as the settings describe it. */
export function mcpSessionPool(settings: ApiDeps['settings']): McpSessionPool {
  return new McpSessionPool({
    maxAnswerBytes: settings.AGENT_MCP_MAX_ANSWER_BYTES, allowPrivate: settings.AGENT_MCP_ALLOW_PRIVATE_NETWORK, idleMs: settings.AGENT_MCP_SESSION_IDLE_SECONDS * 1000,
  });
}

/** The process's MCP session pool, created from the settings on first use. */
export function mcpSessionsOf(deps: ApiDeps): McpSessionPool {
  deps.mcpSessions ??= mcpSessionPool(deps.settings);
  return deps.mcpSessions;
}

/** The process's metrics registry (docs/metrics.md); its refresh is started by api/main.ts. */
export function apiMetricsOf(deps: ApiDeps): ApiMetrics {
  deps.metrics ??= new ApiMetrics();
  return deps.metrics;
}
