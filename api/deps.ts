/**
 * The control-plane API's dependencies: what `main.ts` (and the tests) build and every route
 * receives. Routes import this type from here, never from `app.ts`, so no route depends on the
 * app that mounts it.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../lib/db';
import type { Logger } from '../lib/logger';
import type { Settings } from '../lib/settings';
import type { AccessTokens } from '../lib/identity/access-tokens';
import type { GatewayGrantClient } from '../agent/grants/gateway-grant-client';
import type { ObjectStore } from '../lib/object-store';
import type { EventNotifier } from '../agent/events/event-notifier';
import type { AgentSettings } from '../agent/settings/settings-sync';
import type { RepoCredentials } from '../agent/source/repo-credentials';
import type { McpSessionPool } from '../agent/tools/mcp-sessions';
import type { SourceControlApp } from '../agent/jobs/source-control-app';
import type { ApiMetrics } from './metrics/api-metrics';

export interface ApiDeps {
  log: Logger;
  db: Db;
  /** The environment, with the variables an admin setting replaces reading the synced values (`liveSettings`). */
  settings: Settings;
  /** The admin settings, synced from the database (agent/settings/settings-sync.ts). */
  agentSettings: AgentSettings;
  /** Verifies owners' and operators' access tokens (same `AUTH_JWT_SECRET` as the gateway). */
  tokens: AccessTokens;
  /** Temporal client (workflow starts, updates, signals). */
  temporal: Client;
  temporalReachable: (timeoutMs: number) => Promise<boolean>;
  /** The gateway's grant dispatch (inference grants, prompt rewrite); absent when not configured. */
  grants?: GatewayGrantClient;
  /** Wakes job event streams (one LISTEN connection per process); created on first use when absent. */
  events?: EventNotifier;
  /** Where host runners leave workspace archives for download (absent: downloads answer 503). */
  objectStore?: ObjectStore;
  /** Mints repository credentials through the configured forges (absent: no forge; clones go without a credential). */
  repoCredentials?: RepoCredentials;
  /** The tool relay's sessions with MCP servers (docs/mcp.md); created on first use when absent. */
  mcpSessions?: McpSessionPool;
  /** The deployment's source-control app, loaded once per process; created on first use when absent. */
  sourceControlApp?: SourceControlApp;
  /** The process's Prometheus metrics (docs/metrics.md); created when absent, refreshed once started. */
  metrics?: ApiMetrics;
}
