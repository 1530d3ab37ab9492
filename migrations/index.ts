/**
 * Every migration, oldest first. Add a file named `<UTC timestamp>_<what>.ts` and list it here.
 * A `down` that would lose data refuses (throws) while that data exists.
 */
import type { Knex } from 'knex';
import * as initial from './20261121000000_initial';
import * as identity from './20261121010000_identity';
import * as requestLog from './20261121020000_request_log';
import * as runtimeConfig from './20261121030000_runtime_config';
import * as routewise from './20261121040000_routewise';
import * as agentJobs from './20261121050000_agent_jobs';
import * as agentHostRemoved from './20261121071500_agent_host_removed';
import * as agentTitleGrants from './20261121080000_agent_title_grants';
import * as agentAuditLog from './20261125010000_agent_audit_log';
import * as agentSandboxLifecycle from './20261125020000_agent_sandbox_lifecycle';
import * as agentHostRemovalRequest from './20261125030000_agent_host_removal_request';
import * as agentSandboxObservations from './20261125050000_agent_sandbox_observations';
import * as agentSandboxArchives from './20261125060000_agent_sandbox_archives';
import * as agentChatDeletion from './20261125070000_agent_chat_deletion';
import * as agentSettings from './20261125080000_agent_settings';
import * as agentAttemptLimits from './20261126030000_agent_attempt_limits';
import * as agentNativeDrivers from './20261126050000_agent_native_drivers';
import * as agentNativeQuestions from './20261126060000_agent_native_questions';
import * as agentExecutionProfiles from './20261128010000_agent_execution_profiles';
import * as agentServerAllocations from './20261126040000_agent_server_allocations';
import * as agentHostSettingsRetired from './20261127010000_agent_host_settings_retired';
import * as agentSourceControlAccounts from './20261128040000_agent_source_control_accounts';
import * as agentMcp from './20261128050000_agent_mcp';
import * as agentTurnPatches from './20261128063000_agent_turn_patches';
import * as agentMcpOauth from './20261128070000_agent_mcp_oauth';
import * as agentSandboxStatesUnused from './20261208050000_agent_sandbox_states_unused';
import * as publicStats from './20261207120000_public_stats';
import * as identitySigningKeysImpersonation from './20261208010000_identity_signing_keys_impersonation';
import * as agentForks from './20261208020000_agent_forks';
import * as agentUserSshServers from './20261208030000_agent_user_ssh_servers';
import * as agentAttemptClaims from './20261208040000_agent_attempt_claims';

export interface Migration {
  name: string;
  up: (knex: Knex) => Promise<void>;
  down: (knex: Knex) => Promise<void>;
  /** The tables this migration creates. */
  TABLES: readonly string[];
}

export const migrations: readonly Migration[] = [
  { name: '20261121000000_initial', ...initial },
  { name: '20261121010000_identity', ...identity },
  { name: '20261121020000_request_log', ...requestLog },
  { name: '20261121030000_runtime_config', ...runtimeConfig },
  { name: '20261121040000_routewise', ...routewise },
  { name: '20261121050000_agent_jobs', ...agentJobs },
  { name: '20261121071500_agent_host_removed', ...agentHostRemoved },
  { name: '20261121080000_agent_title_grants', ...agentTitleGrants },
  { name: '20261125010000_agent_audit_log', ...agentAuditLog },
  { name: '20261125020000_agent_sandbox_lifecycle', ...agentSandboxLifecycle },
  { name: '20261125030000_agent_host_removal_request', ...agentHostRemovalRequest },
  { name: '20261125050000_agent_sandbox_observations', ...agentSandboxObservations },
  { name: '20261125060000_agent_sandbox_archives', ...agentSandboxArchives },
  { name: '20261125070000_agent_chat_deletion', ...agentChatDeletion },
  { name: '20261125080000_agent_settings', ...agentSettings },
  { name: '20261126030000_agent_attempt_limits', ...agentAttemptLimits },
  { name: '20261126040000_agent_server_allocations', ...agentServerAllocations },
  { name: '20261126050000_agent_native_drivers', ...agentNativeDrivers },
  { name: '20261126060000_agent_native_questions', ...agentNativeQuestions },
  { name: '20261127010000_agent_host_settings_retired', ...agentHostSettingsRetired },
  { name: '20261128010000_agent_execution_profiles', ...agentExecutionProfiles },
  { name: '20261128040000_agent_source_control_accounts', ...agentSourceControlAccounts },
  { name: '20261128050000_agent_mcp', ...agentMcp },
  { name: '20261128063000_agent_turn_patches', ...agentTurnPatches },
  { name: '20261128070000_agent_mcp_oauth', ...agentMcpOauth },
  { name: '20261207120000_public_stats', ...publicStats },
  { name: '20261208010000_identity_signing_keys_impersonation', ...identitySigningKeysImpersonation },
  { name: '20261208020000_agent_forks', ...agentForks },
  { name: '20261208030000_agent_user_ssh_servers', ...agentUserSshServers },
  { name: '20261208040000_agent_attempt_claims', ...agentAttemptClaims },
  { name: '20261208050000_agent_sandbox_states_unused', ...agentSandboxStatesUnused },
];
