/**
 * The host runner's SSH server asks the control-plane API, with the host's own credential, who
 * may open a shell in a chat's sandbox and records each session (docs/ssh.md). Served by
 * api/routes/host-ssh.ts, called by activities/ssh/ through activities/agent/host-api-client.ts.
 * The API writes the audit rows (`agent.sandbox.ssh_session_*`); the host only reports.
 */
import { z } from 'zod';
import { defineEndpoint } from './endpoint';

/** A chat id as an SSH user name carries it (`job_…`). */
export const SSH_JOB_ID_PATTERN = /^job_[a-z2-7]{20}$/;

/** Why a session is refused (the SSH client is told only "Permission denied"; the audit row and the host's log say which). */
export const SSH_REFUSALS = ['unknown_chat', 'not_owner', 'owner_inactive', 'no_sandbox', 'other_host', 'sandbox_not_running'] as const;
export type SshRefusal = (typeof SSH_REFUSALS)[number];

/**
 * `POST /v1/agent/hosts/:hostId/ssh/sessions`: a client proved it holds `public_key` and asks for
 * chat `job_id`. Allowed when the key is registered by the chat's owner (an active account with
 * `agent.use`), and the chat's sandbox is running on this host with no stop or delete under way.
 * Either way the API writes one audit row; an allowed answer opens the session (its id closes it).
 */
export const sshSessionOpen = defineEndpoint({
  name: 'ssh session open',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/ssh/sessions',
  request: z.object({
    job_id: z.string().regex(SSH_JOB_ID_PATTERN, 'a chat id (job_…)'),
    /** The key's SSH wire form, base64. */
    public_key: z.string().min(1).max(4096).regex(/^[A-Za-z0-9+/]+={0,2}$/, 'base64'),
    /** The client's address as the host saw it. */
    client_address: z.string().max(64).optional(),
  }).strict(),
  response: z.discriminatedUnion('allowed', [
    z.object({
      allowed: z.literal(true),
      session_id: z.string(),
      user_id: z.number().int(),
      fingerprint: z.string(),
      container_name: z.string(),
      /** The chat member's UID in the group container: the session runs as it. */
      uid: z.number().int(),
    }),
    z.object({ allowed: z.literal(false), reason: z.enum(SSH_REFUSALS) }),
  ]),
});

/** `POST /v1/agent/hosts/:hostId/ssh/sessions/:sessionId/close`: the session ended; the API records how long it lasted. */
export const sshSessionClose = defineEndpoint({
  name: 'ssh session close',
  method: 'POST',
  route: '/v1/agent/hosts/:hostId/ssh/sessions/:sessionId/close',
  request: z.object({
    job_id: z.string().regex(SSH_JOB_ID_PATTERN, 'a chat id (job_…)'),
    /** What ended it: the client left, the command or shell ended, the sandbox stopped under it, or the host runner shut down. */
    ended_by: z.enum(['client', 'command', 'sandbox', 'host']),
  }).strict(),
  response: z.object({
    /** False when the session was already closed or is not this host's. */
    recorded: z.boolean(),
    duration_ms: z.number().int().nullable(),
  }),
});

/** Every endpoint of the host's SSH server. */
export const hostSshEndpoints = [sshSessionOpen, sshSessionClose] as const;
