/**
 * Settings of an agent's tools and publishing (issue 34): the source-control app and OAuth linking
 * (docs/source-control.md), the forges (docs/forges.md), the MCP tool relay (docs/mcp.md) and the
 * publisher (docs/publisher.md). Part of the one settings schema of lib/settings.ts.
 */
import { z } from 'zod';
import { flag, optionalString, optionalUrl, parseJsonText } from './settings-fields';

/** One operator-approved stdio MCP server (`AGENT_MCP_STDIO_TEMPLATES`). */
const mcpStdioTemplateSchema = z.object({
  command: z.string().min(1).max(1024).regex(/^\//, 'must be an absolute path'),
  args: z.array(z.string().max(4096)).max(64).default([]),
  env_names: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/)).max(32).default([]),
}).strict();
const mcpStdioTemplatesSchema = z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'template names are 1-32 of a-z 0-9 _ -'), mcpStdioTemplateSchema);
/** The parsed `AGENT_MCP_STDIO_TEMPLATES`. */
export type McpStdioTemplates = z.infer<typeof mcpStdioTemplatesSchema>;

export const toolSettingsShape = {
  /** Source-control app id; with the private key below, jobs on repositories need the app loaded (503 otherwise). */
  AGENT_SOURCE_CONTROL_APP_ID: optionalString(),
  /** Path of the source-control app's private key (PEM). */
  AGENT_SOURCE_CONTROL_APP_PRIVATE_KEY_PATH: optionalString(),
  /** OAuth client id of the source-control app (GitHub) for linking owners' accounts (docs/source-control.md). With the secret below, the `github` provider is offered. */
  AGENT_GITHUB_OAUTH_CLIENT_ID: optionalString(),
  /** OAuth client secret of the source-control app. A secret. */
  AGENT_GITHUB_OAUTH_CLIENT_SECRET: optionalString(),
  /** Where GitHub sends the owner back after consent: the web page that posts `code` and `state` to the callback route; must match the app's callback URL. */
  AGENT_GITHUB_OAUTH_REDIRECT_URL: optionalUrl(),
  /** GitHub's web origin (authorize and token endpoints; job `repo` URLs under it are the app's repositories: docs/forges.md). Default `https://github.com`; tests point it at loopback. */
  AGENT_GITHUB_WEB_URL: z.string().url().default('https://github.com'),
  /** GitHub's REST API base URL (OAuth linking and the source-control app's forge adapter: docs/forges.md). Default `https://api.github.com`; tests point it at loopback. */
  AGENT_GITHUB_API_URL: z.string().url().default('https://api.github.com'),
  /** Base URL of the Gitea forge (e.g. `https://git.example.com`): offered as the second provider, and job `repo` URLs under it are its repositories (docs/forges.md); unset: no `gitea` provider, no Gitea credentials. */
  AGENT_GITEA_URL: optionalUrl(),
  /** OAuth2 client id of the Gitea application owners link through (PKCE S256). */
  AGENT_GITEA_OAUTH_CLIENT_ID: optionalString(),
  /** OAuth2 client secret of that Gitea application. A secret. */
  AGENT_GITEA_OAUTH_CLIENT_SECRET: optionalString(),
  /** Where Gitea sends the owner back after consent (one of the application's redirect URIs). */
  AGENT_GITEA_OAUTH_REDIRECT_URL: optionalUrl(),
  /** Seconds a linked account's repository grants are trusted before job creation fetches them again from the provider. Default 600. */
  AGENT_SOURCE_CONTROL_GRANTS_MAX_AGE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(600),
  /** Deadline of one call to a source-control provider (token endpoint, user, repositories), milliseconds. Default 10000. */
  AGENT_SOURCE_CONTROL_HTTP_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** A Gitea site administrator the control plane alone uses to mint repository credentials (docs/forges.md "Gitea"): it creates each repository's service users and their tokens. With the password, and `AGENT_GITEA_URL`, Gitea repositories get clone credentials. */
  AGENT_GITEA_ADMIN_USERNAME: optionalString(),
  /** That administrator's password. A secret. */
  AGENT_GITEA_ADMIN_PASSWORD: optionalString(),
  /** Prefix of the per-repository service users' names on Gitea (`<prefix>-r-<hash>`, `<prefix>-w-<hash>`). Default `agent`. */
  AGENT_GITEA_SERVICE_USER_PREFIX: z.string().regex(/^[a-z][a-z0-9-]{0,15}$/).default('agent'),
  /** The work-in-progress title prefix the Gitea is configured with (`WORK_IN_PROGRESS_PREFIXES`): drafts are made with it. Default `WIP:`. */
  AGENT_GITEA_DRAFT_PREFIX: z.string().min(1).max(32).default('WIP:'),
  /**
   * Operator-approved stdio MCP servers the tool relay may launch on the control plane
   * (docs/mcp.md "Stdio programs"): a JSON object `{"<template>": {"command": "/absolute/path",
   * "args": [...], "env_names": [...]}}`. An owner's stdio connection names one of these templates
   * (or an imported snippet whose command and args equal one); `env_names` are the environment
   * variables the owner may set for it. Anything else is refused. Default `{}`: none.
   */
  AGENT_MCP_STDIO_TEMPLATES: z.string().default('{}').transform(parseJsonText).pipe(mcpStdioTemplatesSchema),
  /** Remote MCP URLs may be `http:` and name loopback or private-network addresses (dev stacks and tests only; docs/mcp.md "Remote URLs"). Default false. */
  AGENT_MCP_ALLOW_PRIVATE_NETWORK: flag(false),
  /** Deadline of one tool call through the relay (connect included), seconds; a hung call is cut and reported as a `tool_result` error. Default 60. */
  AGENT_MCP_CALL_TIMEOUT_SECONDS: z.coerce.number().positive().max(3600).default(60),
  /** Deadline of a discovery (connect and list tools), seconds. Default 20. */
  AGENT_MCP_DISCOVERY_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(20),
  /** Largest answer of an MCP server the relay reads (one HTTP response, or one tool result), bytes. Default 1 MiB. */
  AGENT_MCP_MAX_ANSWER_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  /** A relay session (a launched stdio program or an HTTP session) unused this long is closed (the program killed), seconds. Default 60. */
  AGENT_MCP_SESSION_IDLE_SECONDS: z.coerce.number().positive().max(3600).default(60),
  /** How long a relay call of a tool that needs the owner's approval waits for it, seconds (bounded by the call's deadline). Default 120. */
  AGENT_MCP_APPROVAL_WAIT_SECONDS: z.coerce.number().min(0).max(3600).default(120),
  /** The owner's web page an MCP server's OAuth authorization returns to (`?code=…&state=…`; it posts both to `…/oauth/callback`); unset: OAuth for MCP connections is 503 (docs/mcp.md "OAuth"). */
  AGENT_MCP_OAUTH_REDIRECT_URL: z.string().url().max(2048).optional(),
  /** Largest diff of one turn that is captured and published as a commit, KiB (docs/publisher.md "Capture"); a larger one is recorded as too large and told to the owner. Default 8192. */
  AGENT_PATCH_MAX_KIB: z.coerce.number().int().positive().max(1024 * 1024).default(8192),
} as const;

/** Cross-field rules of these settings (the Gitea administrator is both-or-neither and needs the Gitea URL). */
export function refineToolSettings(s: { AGENT_GITEA_ADMIN_USERNAME?: string | undefined; AGENT_GITEA_ADMIN_PASSWORD?: string | undefined; AGENT_GITEA_URL?: string | undefined }, ctx: z.RefinementCtx): void {
  if (Boolean(s.AGENT_GITEA_ADMIN_USERNAME) !== Boolean(s.AGENT_GITEA_ADMIN_PASSWORD)) {
    const missing = s.AGENT_GITEA_ADMIN_USERNAME ? 'AGENT_GITEA_ADMIN_PASSWORD' : 'AGENT_GITEA_ADMIN_USERNAME';
    ctx.addIssue({ code: 'custom', path: [missing], message: 'the Gitea administrator needs both AGENT_GITEA_ADMIN_USERNAME and AGENT_GITEA_ADMIN_PASSWORD' });
  }
  if (s.AGENT_GITEA_ADMIN_USERNAME && !s.AGENT_GITEA_URL) {
    ctx.addIssue({ code: 'custom', path: ['AGENT_GITEA_URL'], message: 'is required with the Gitea administrator (AGENT_GITEA_ADMIN_USERNAME)' });
  }
}
