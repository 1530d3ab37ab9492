/**
 * What an owner may give to create or change an MCP connection (docs/mcp.md "Connections"), checked
 * strictly and bounded before anything is stored: a remote streamable-HTTP URL with an auth profile,
 * a stdio launch specification that must be an operator-approved template (`AGENT_MCP_STDIO_TEMPLATES`),
 * or an imported `{"mcpServers": {...}}` snippet, each of whose servers is one of those two.
 */
import { z } from 'zod';
import { AppError } from '../../lib/errors';
import type { McpStdioTemplates } from '../../lib/settings';

/** A connection's name: the prefix of its tools' names as the model sees them. */
export const CONNECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
/** Most servers one imported snippet may hold. */
export const MAX_IMPORTED_SERVERS = 16;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** Headers the relay sets itself; an owner cannot override them. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'content-type', 'accept', 'connection', 'transfer-encoding', 'mcp-session-id', 'mcp-protocol-version', 'cookie']);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

const name = z.string().regex(CONNECTION_NAME, 'names are 1-32 letters, digits, _ or -, starting with a letter or digit');
const headerValue = z.string().min(1).max(8192).regex(/^[^\r\n]*$/, 'must be one line');
const headers = z.record(z.string().regex(HEADER_NAME, 'must be a header name'), headerValue)
  .refine((h) => Object.keys(h).length <= 16, 'at most 16 headers')
  .refine((h) => Object.keys(h).every((k) => !RESERVED_HEADERS.has(k.toLowerCase())), 'names a header the relay sets itself');
const env = z.record(z.string().regex(ENV_NAME, 'must be an environment variable name'), z.string().max(32_768))
  .refine((e) => Object.keys(e).length <= 32, 'at most 32 variables');
const url = z.string().max(2048).url();
export const authSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('none') }).strict(),
  z.object({ type: z.literal('bearer'), token: z.string().min(1).max(8192).regex(/^[^\r\n]*$/, 'must be one line') }).strict(),
  z.object({ type: z.literal('headers'), headers }).strict(),
]);
const approvalPolicy = z.enum(['none', 'required']);

/** `POST /v1/agent/mcp/connections`: one connection from a URL or a stdio template. */
export const createConnectionSchema = z.object({
  name,
  url: url.optional(),
  auth: authSchema.optional(),
  stdio: z.object({ template: z.string().max(64), env: env.optional() }).strict().optional(),
  approval_policy: approvalPolicy.optional(),
}).strict().superRefine((body, ctx) => {
  if ((body.url === undefined) === (body.stdio === undefined)) ctx.addIssue({ code: 'custom', path: ['url'], message: 'give exactly one of url or stdio' });
  if (body.stdio && body.auth) ctx.addIssue({ code: 'custom', path: ['auth'], message: 'a stdio connection takes stdio.env, not auth' });
});

/** `PATCH /v1/agent/mcp/connections/:id`: omitted fields keep their values (credentials included). */
export const updateConnectionSchema = z.object({
  name: name.optional(),
  url: url.optional(),
  auth: authSchema.optional(),
  env: env.optional(),
  approval_policy: approvalPolicy.optional(),
  connector_id: z.string().max(64).nullable().optional(),
}).strict();

const snippetServer = z.union([
  z.object({ type: z.enum(['stdio']).optional(), command: z.string().min(1).max(1024), args: z.array(z.string().max(4096)).max(64).optional(), env: env.optional() }).strict(),
  z.object({ type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(), url, headers: headers.optional() }).strict(),
]);
/** `POST /v1/agent/mcp/connections/import`: the common `mcpServers` snippet. */
export const importSchema = z.object({
  mcpServers: z.record(name, snippetServer).refine((s) => Object.keys(s).length >= 1 && Object.keys(s).length <= MAX_IMPORTED_SERVERS, `1 to ${MAX_IMPORTED_SERVERS} servers`),
  approval_policy: approvalPolicy.optional(),
}).strict();

export type CreateConnectionInput = z.infer<typeof createConnectionSchema>;
export type UpdateConnectionInput = z.infer<typeof updateConnectionSchema>;
export type ImportInput = z.infer<typeof importSchema>;
export type AuthInput = z.infer<typeof authSchema>;

/** What is stored of one connection before its id and owner are known. */
export interface ConnectionDraft {
  name: string;
  transport: 'streamable_http' | 'stdio';
  location: 'remote' | 'control_plane';
  source: 'url' | 'mcp_servers' | 'stdio';
  endpointUrl: string | null;
  launch: { command: string; args: string[] } | null;
  template: string | null;
  authProfile: 'none' | 'bearer' | 'headers';
  secrets: { headers: Record<string, string>; env: Record<string, string> };
  approvalPolicy: 'none' | 'required';
}

/** Headers of an auth profile (a bearer token becomes `Authorization: Bearer …`). */
export function headersOfAuth(auth: AuthInput | undefined): { profile: ConnectionDraft['authProfile']; headers: Record<string, string> } {
  if (!auth || auth.type === 'none') return { profile: 'none', headers: {} };
  if (auth.type === 'bearer') return { profile: 'bearer', headers: { Authorization: `Bearer ${auth.token}` } };
  return { profile: 'headers', headers: auth.headers };
}

/** Refuses a URL the relay must not reach: not http(s), credentials in it, or `http:` without the private-network switch. */
export function checkRemoteUrl(text: string, allowPrivate: boolean, param = 'url'): string {
  const parsed = new URL(text);
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new AppError('invalid_request', 'An MCP URL must be https (streamable HTTP)', { param });
  if (parsed.username || parsed.password) throw new AppError('invalid_request', 'An MCP URL must not hold credentials: give them as auth headers', { param });
  if (parsed.protocol === 'http:' && !allowPrivate) throw new AppError('invalid_request', 'An MCP URL must be https', { param });
  parsed.hash = '';
  return parsed.toString();
}

/** The template a stdio launch names, and the owner's env checked against what it allows. */
export function stdioDraftPart(templates: McpStdioTemplates, templateName: string, ownerEnv: Record<string, string> | undefined, param: string): Pick<ConnectionDraft, 'launch' | 'template' | 'secrets'> {
  const template = Object.hasOwn(templates, templateName) ? templates[templateName] : undefined;
  if (!template) throw refuseStdio(templates, param);
  for (const key of Object.keys(ownerEnv ?? {})) {
    if (!template.env_names.includes(key)) {
      throw new AppError('invalid_request', `Template '${templateName}' takes no variable ${key} (allowed: ${template.env_names.join(', ') || 'none'})`, { param: `${param}.env.${key}` });
    }
  }
  return { launch: { command: template.command, args: template.args }, template: templateName, secrets: { headers: {}, env: ownerEnv ?? {} } };
}

function refuseStdio(templates: McpStdioTemplates, param: string): AppError {
  const names = Object.keys(templates);
  return new AppError('invalid_request',
    `Stdio MCP servers run only from operator-approved templates (${names.length ? names.join(', ') : 'none are configured'}); use a remote URL otherwise`, { param });
}

/** The template whose command and args equal an imported stdio server's, else 400. */
function templateOfLaunch(templates: McpStdioTemplates, command: string, args: string[], param: string): string {
  for (const [templateName, template] of Object.entries(templates)) {
    if (template.command === command && template.args.length === args.length && template.args.every((a, i) => a === args[i])) return templateName;
  }
  throw refuseStdio(templates, param);
}

/** The drafts of an imported snippet, one per server, in the snippet's order. */
export function draftsOfImport(input: ImportInput, options: { templates: McpStdioTemplates; allowPrivate: boolean }): ConnectionDraft[] {
  return Object.entries(input.mcpServers).map(([serverName, server]) => {
    const param = `mcpServers.${serverName}`;
    const approvalPolicy = input.approval_policy ?? 'none';
    if ('url' in server) {
      const endpointUrl = checkRemoteUrl(server.url, options.allowPrivate, `${param}.url`);
      const profile = server.headers && Object.keys(server.headers).length > 0 ? 'headers' : 'none';
      return {
        name: serverName, transport: 'streamable_http', location: 'remote', source: 'mcp_servers', endpointUrl, launch: null, template: null,
        authProfile: profile, secrets: { headers: server.headers ?? {}, env: {} }, approvalPolicy,
      };
    }
    const template = templateOfLaunch(options.templates, server.command, server.args ?? [], param);
    return {
      name: serverName, transport: 'stdio', location: 'control_plane', source: 'mcp_servers', endpointUrl: null, approvalPolicy, authProfile: 'none',
      ...stdioDraftPart(options.templates, template, server.env, param),
    };
  });
}

/** The draft of a single connection (`POST /v1/agent/mcp/connections`). */
export function draftOfCreate(input: CreateConnectionInput, options: { templates: McpStdioTemplates; allowPrivate: boolean }): ConnectionDraft {
  const approvalPolicy = input.approval_policy ?? 'none';
  if (input.stdio) {
    return {
      name: input.name, transport: 'stdio', location: 'control_plane', source: 'stdio', endpointUrl: null, authProfile: 'none', approvalPolicy,
      ...stdioDraftPart(options.templates, input.stdio.template, input.stdio.env, 'stdio.template'),
    };
  }
  const auth = headersOfAuth(input.auth);
  return {
    name: input.name, transport: 'streamable_http', location: 'remote', source: 'url', endpointUrl: checkRemoteUrl(input.url ?? '', options.allowPrivate),
    launch: null, template: null, authProfile: auth.profile, secrets: { headers: auth.headers, env: {} }, approvalPolicy,
  };
}
