/**
 * The database browser's visible schema (docs/agent-admin.md "Database browser"):
 * an allowlist of tables and, per table, of columns. Nothing else can be named by a query: a table
 * or column missing here does not exist for the browser, so a column a later migration adds stays
 * invisible until someone decides to list it.
 *
 * Never listed: secrets and what is derived from them (password, key, token and credential hashes,
 * their prefixes and fingerprints, sealed or plain provider keys), owners' content and secrets
 * (prompts, results and event payloads, read through the audited content route; job and owner
 * variables), e-mail addresses, and free-form JSON that may carry credentials (route configs,
 * runtime `site_settings` values). Whole tables left out: `email_outbox` (messages carry
 * verification links), `email_verifications` and `refresh_sessions` (token hashes only),
 * `disabled_provider_env_keys` and `provider_env_key_min_roles` (keyed by key fingerprints),
 * `knex_migrations_lock`, `agent_mcp_credentials` (the tool relay's credential digests),
 * `agent_mcp_oauth_states` (OAuth state digests and sealed PKCE verifiers).
 */

/** How a column is compared, searched and rendered. */
export type ColumnKind = 'text' | 'integer' | 'number' | 'boolean' | 'timestamp' | 'date' | 'uuid' | 'json' | 'text_array';

export interface VisibleTable {
  /** The primary key: the default sort and the tie-breaker after any sort column. */
  key: readonly string[];
  columns: Readonly<Record<string, ColumnKind>>;
}

const T = 'text' as const;
const I = 'integer' as const;
const N = 'number' as const;
const B = 'boolean' as const;
const TS = 'timestamp' as const;
const J = 'json' as const;

const VISIBLE: Readonly<Record<string, VisibleTable>> = {
  agent_attempts: { key: ['attempt_id'], columns: { attempt_id: T, turn_id: T, job_id: T, host_id: T, state: T, generation: I, error: T, started_at: TS, finished_at: TS } },
  agent_audit_log: {
    key: ['id'],
    columns: {
      id: I, created_at: TS, category: T, action: T, source: T, actor_type: T, actor_user_id: I, actor_name: T, actor_ip: T,
      target_type: T, target_id: T, reason: T, outcome: T, details: J,
    },
  },
  agent_deletion_requests: {
    key: ['id'],
    columns: {
      id: T, job_id: T, owner_id: I, group_id: T, state: T, attempts: I, next_attempt_at: TS, lease_expires_at: TS, last_error: T,
      purged_at: TS, created_at: TS, updated_at: TS, finished_at: TS,
    },
  },
  // Hidden: payload (owners' content: POST /admin/agent/runs/{job_id}/events/{event_id}/content, audited).
  agent_events: { key: ['event_id'], columns: { event_id: I, job_id: T, turn_seq: I, attempt_id: T, seq: I, event_type: T, is_error: B, dedupe_key: T, created_at: TS } },
  // Hidden: token_hash, token_prefix.
  agent_grants: {
    key: ['grant_id'],
    columns: {
      grant_id: T, user_id: I, model: T, kind: T, job_id: T, attempt_id: T, group_id: T, generation: I, host_id: T, operation_id: T,
      expires_at: TS, revoked_at: TS, created_at: TS, updated_at: TS,
    },
  },
  // Hidden: credential_hash, credential_prefix.
  agent_hosts: {
    key: ['host_id'],
    columns: {
      host_id: T, slots_saved: I, slots_total: I, runtime: T, runner_version: T, capabilities: J, preflight: J, enrolled_at: TS, last_heartbeat_at: TS,
      removal_requested_at: TS, removed_at: TS, removal_requested_by: J,
    },
  },
  // Hidden: env (a task's environment may hold secrets).
  agent_jobs: {
    key: ['job_id'],
    columns: {
      job_id: T, owner_id: I, title: T, title_source: T, model: T, repo: T, base_ref: T, base_sha: T, environment_id: T, driver: T,
      execution_profile: T, host_id: T, group_id: T, created_at: TS, updated_at: TS, deleted_at: TS,
    },
  },
  // Hidden: value (write-only to its owner).
  // MCP tools (docs/mcp.md). Hidden: credentials_sealed and oauth_sealed (sealed secrets), endpoint_url (a URL's query may carry an owner's key).
  agent_mcp_connections: {
    key: ['connection_id'],
    columns: {
      connection_id: T, owner_id: I, name: T, transport: T, location: T, source: T, template: T, auth_profile: T, approval_policy: T, connector_id: T,
      discovered_at: TS, discovery_error: T, oauth_authorized_at: TS, oauth_expires_at: TS, created_at: TS, updated_at: TS,
    },
  },
  agent_mcp_bindings: { key: ['job_id', 'connection_id'], columns: { job_id: T, connection_id: T, created_at: TS } },
  agent_mcp_legacy_bindings: { key: ['job_id', 'server_name'], columns: { job_id: T, server_name: T, reason: T, created_at: TS } },
  agent_mcp_approvals: {
    key: ['job_id', 'connection_id', 'tool_name'],
    columns: { job_id: T, connection_id: T, tool_name: T, generation: I, state: T, requested_at: TS, decided_at: TS, decided_by: I },
  },
  // Hidden: secret_hash, secret_prefix.
  agent_mcp_connectors: { key: ['connector_id'], columns: { connector_id: T, owner_id: I, name: T, created_at: TS, updated_at: TS, revoked_at: TS } },
  // The publisher (docs/publisher.md). Hidden: patch (owners' code), capture_error and publish_error (may quote it).
  agent_turn_patches: {
    key: ['turn_id'],
    columns: {
      turn_id: T, attempt_id: T, job_id: T, turn_seq: I, capture_state: T, start_tree: T, end_tree: T, bytes: I, publish_state: T, branch: T,
      commit_sha: T, pr_number: I, pr_url: T, pr_draft: B, created_at: TS, published_at: TS,
    },
  },
  agent_owner_variables: { key: ['user_id', 'name'], columns: { user_id: I, name: T, updated_at: TS } },
  agent_sandbox_archives: { key: ['group_id', 'generation'], columns: { group_id: T, generation: I, object_key: T, bytes: I, sha256: T, verified_by: T, created_at: TS } },
  agent_sandbox_members: { key: ['job_id'], columns: { job_id: T, group_id: T, uid: I, created_at: TS } },
  agent_sandbox_orphans: {
    key: ['host_id', 'container_id'],
    columns: {
      host_id: T, container_id: T, container_name: T, group_id: T, generation: T, reason: T, first_seen_at: TS, last_seen_at: TS,
      removal_ordered_at: TS, removed_at: TS,
    },
  },
  agent_sandbox_usage_daily: { key: ['group_id', 'day'], columns: { group_id: T, day: 'date', owner_id: I, running_seconds: N } },
  agent_sandboxes: {
    key: ['group_id'],
    columns: {
      group_id: T, host_id: T, container_name: T, container_id: T, generation: I, state: T, execution_profile: T, fork_helper_version: I, resources: J,
      last_activity_at: TS, created_at: TS, updated_at: TS, pending_action: T, pending_from_state: T, hidden_at: TS, hidden_reason: T,
      native_resume_lost_at: TS, observed_at: TS, observed_state: T, observed_cpu_percent: N, observed_memory_bytes: I, observed_disk_bytes: I,
    },
  },
  // Hidden: sealed (credential fields; their `value` is always null).
  agent_settings: { key: ['key'], columns: { key: T, value: J, updated_at: TS } },
  agent_settings_state: { key: ['singleton'], columns: { singleton: B, revision: I, updated_at: TS } },
  // Hidden: prompt, result (owners' content).
  agent_turns: {
    key: ['turn_id'],
    columns: {
      turn_id: T, job_id: T, seq: I, state: T, error: T, wait_reason: T, attempt_id: T, cancel_requested_at: TS, created_at: TS, started_at: TS, finished_at: TS,
    },
  },
  // Hidden: key_hash, prefix.
  api_keys: { key: ['id'], columns: { id: I, user_id: I, name: T, created_at: TS, expires_at: TS, revoked_at: TS, updated_at: TS } },
  // Hidden: user_message_hash (derived from the user's message).
  api_logs: {
    key: ['id'],
    columns: {
      id: I, created_at: TS, request_id: T, user_id: I, api_key_id: I, model: T, provider: T, endpoint_id: T, surface: T, status: I,
      stream: B, latency_ms: I, first_token_ms: I, prompt_tokens: I, completion_tokens: I, cache_read_tokens: I, num_user_turns: I,
      num_tool_calls: I, cost_usd: N, error_code: T, metadata: J, log_id: 'uuid', synthetic: B, user_message_chars: I, user_message_entropy: N,
    },
  },
  disabled_providers: { key: ['provider'], columns: { provider: T, reason: T, created_at: TS } },
  knex_migrations: { key: ['id'], columns: { id: I, name: T, batch: I, migration_time: TS } },
  // Hidden: email.
  login_events: { key: ['id'], columns: { id: I, user_id: I, ip: T, user_agent: T, outcome: T, created_at: TS } },
  model_concurrency_exemptions: { key: ['model_id'], columns: { model_id: T, created_at: TS } },
  model_visibility_overrides: { key: ['model_id'], columns: { model_id: T, required_role: T, created_at: TS, updated_at: TS } },
  // Hidden: api_key, key_prefix, fingerprint.
  provider_api_keys: { key: ['id'], columns: { id: I, provider: T, label: T, min_role: T, disabled_at: TS, created_at: TS, updated_at: TS } },
  // Hidden: api_key, api_key_fingerprint.
  provider_definitions: { key: ['slug'], columns: { slug: T, display_name: T, kind: T, base_url: T, created_at: TS, updated_at: TS } },
  provider_hourly_stats: {
    key: ['hour', 'provider', 'model', 'endpoint_id'],
    columns: {
      hour: TS, provider: T, model: T, endpoint_id: T, requests: I, errors: I, prompt_tokens: I, completion_tokens: I, cache_read_tokens: I,
      cost_usd: N, latency_ms_sum: I,
    },
  },
  // Hidden: api_key, api_key_fingerprint, settings (free-form, may carry credentials).
  provider_route_candidates: {
    key: ['id'],
    columns: { id: I, model_id: T, provider: T, kind: T, base_url: T, provider_model_id: T, weight: N, created_at: TS, updated_at: TS },
  },
  // Hidden: config (free-form, may carry credentials), api_key, api_key_fingerprint.
  provider_route_configs: { key: ['model_id', 'route_id'], columns: { model_id: T, route_id: T, created_at: TS, updated_at: TS } },
  provider_weight_overrides: { key: ['model_id', 'endpoint_id'], columns: { model_id: T, endpoint_id: T, weight: N, created_at: TS, updated_at: TS } },
  routewise_probe_leases: { key: ['model_id'], columns: { model_id: T, holder: T, acquired_at: TS, expires_at: TS } },
  // Hidden: value (a key-value store whose future keys cannot be vetted one by one).
  site_settings: { key: ['key'], columns: { key: T, updated_at: TS } },
  // Hidden: email, password_hash.
  users: {
    key: ['id'],
    columns: { id: I, role: T, permissions: 'text_array', email_verified_at: TS, suspended_at: TS, deleted_at: TS, created_at: TS, updated_at: TS },
  },
};

/**
 * The visible schema as a Map (so no inherited property such as `constructor` or `__proto__` can
 * ever resolve as a table), in name order.
 */
export const VISIBLE_SCHEMA: ReadonlyMap<string, VisibleTable> = new Map(Object.entries(VISIBLE).sort(([a], [b]) => a.localeCompare(b)));

/** The kind of `column` of `table` when both are visible, else undefined (own properties only). */
export function visibleColumn(table: VisibleTable, column: string): ColumnKind | undefined {
  return Object.hasOwn(table.columns, column) ? table.columns[column] : undefined;
}
