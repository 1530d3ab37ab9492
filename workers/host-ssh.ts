/**
 * The host runner's SSH server, when `AGENT_SSH_PORT` is set (docs/ssh.md): the host key kept
 * under `AGENT_SSH_HOST_KEY_PATH`, the server listening on `AGENT_SSH_BIND_ADDRESS`, and the
 * address owners are told (reported with each heartbeat).
 */
import { resolve } from 'node:path';
import type Docker from 'dockerode';
import { utils } from 'ssh2';
import type { Logger } from '../lib/logger';
import type { Settings } from '../lib/settings';
import type { HostApiClient } from '../activities/agent/host-api-client';
import { loadOrCreateHostKey } from '../activities/ssh/host-key';
import { createSshServer, type SshServer } from '../activities/ssh/ssh-server';
import { sshFingerprint } from '../agent/ssh/ssh-keys';

export interface HostSsh {
  server: SshServer;
  /** What owners type: `ssh <job_id>@<host> -p <port>`. */
  address: { host: string; port: number };
}

export async function startHostSsh(input: { settings: Settings; docker: Docker; api: HostApiClient; hostId: string; log: Logger }): Promise<HostSsh | undefined> {
  const { settings, log } = input;
  if (settings.AGENT_SSH_PORT === undefined) return undefined;
  const keyPath = resolve(settings.AGENT_SSH_HOST_KEY_PATH);
  const hostKey = await loadOrCreateHostKey(keyPath);
  const parsed = utils.parseKey(hostKey);
  if (parsed instanceof Error) throw new Error(`AGENT_SSH_HOST_KEY_PATH ${keyPath} does not hold an SSH private key: ${parsed.message}`);
  const server = createSshServer({
    docker: input.docker, api: input.api, hostKey, log,
    loginTimeoutMs: settings.AGENT_SSH_LOGIN_TIMEOUT_SECONDS * 1000, maxUnauthenticated: settings.AGENT_SSH_MAX_UNAUTHENTICATED,
  });
  const port = await server.listen(settings.AGENT_SSH_PORT, settings.AGENT_SSH_BIND_ADDRESS);
  const address = { host: settings.AGENT_SSH_PUBLIC_HOST ?? input.hostId, port: settings.AGENT_SSH_PUBLIC_PORT ?? port };
  log.info({ event: 'agent_ssh_listening', bind: settings.AGENT_SSH_BIND_ADDRESS, port, public: address, host_key: sshFingerprint(parsed.getPublicSSH()) }, 'ssh server listening');
  return { server, address };
}
