/**
 * The host runner's SSH server (docs/ssh.md): owners open a shell or run a command in their
 * chat's retained sandbox with `ssh <job_id>@<host> -p <port>`. The server runs on the host, not
 * in the sandbox (which keeps no network): it authenticates the client's public key, asks the
 * control-plane API whether that key may reach the chat on this host (the API audits each
 * answer), and bridges each session channel to a `docker exec` as the chat's member
 * (sandbox-shell.ts). Only public-key authentication, and only `shell`, `exec`, `pty` and
 * `window-change`: port forwarding, agent and X11 forwarding, environment variables and every
 * subsystem (sftp included) are refused (ssh2 refuses what has no listener). A connection that
 * does not log in within `loginTimeoutMs` is closed (login-guard.ts).
 */
import type { AddressInfo } from 'node:net';
import type Docker from 'dockerode';
import { Server, utils, type Connection, type ParsedKey, type PublicKeyAuthContext } from 'ssh2';
import type { Logger } from '../../lib/logger';
import { SSH_JOB_ID_PATTERN } from '../../lib/contracts/host-ssh';
import type { HostApiClient, SshSessionAnswer } from '../agent/host-api-client';
import type { SandboxShell } from './sandbox-shell';
import { serveSession } from './ssh-channel';
import { createLoginGuard } from './login-guard';

/** Failed authentication attempts before the connection is dropped. */
const MAX_AUTH_ATTEMPTS = 6;
/** Session channels one connection may have open at once. */
const MAX_CHANNELS = 4;
/** How often a connection checks that its sandbox still runs (a stopped container may leave an exec stream open). */
const SANDBOX_WATCH_MS = 2000;

export interface SshServerOptions {
  docker: Docker;
  api: Pick<HostApiClient, 'sshSessionOpen' | 'sshSessionClose'>;
  /** The host's private key (OpenSSH form; host-key.ts). */
  hostKey: string;
  log: Logger;
  /** How long a connection may stay unauthenticated (`AGENT_SSH_LOGIN_TIMEOUT_SECONDS`), milliseconds. */
  loginTimeoutMs: number;
  /** Connections waiting to log in at once (`AGENT_SSH_MAX_UNAUTHENTICATED`). */
  maxUnauthenticated: number;
}

export interface SshServer {
  /** Listens; resolves with the bound port. */
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting, ends every live session (reported `host`). */
  close(): Promise<void>;
}

type Allowed = Extract<SshSessionAnswer, { allowed: true }>;
type EndedBy = 'client' | 'command' | 'sandbox' | 'host';

export function createSshServer(options: SshServerOptions): SshServer {
  const live = new Set<() => void>();
  const server = new Server({ hostKeys: [options.hostKey], ident: 'agent-sandbox-ssh' }, (client, info) => {
    const end = handleConnection(options, client, info.ip);
    live.add(end);
    client.on('ready', () => guard.loggedIn(info.ip, info.port));
    client.on('close', () => live.delete(end));
  });
  // The guard owns the listener: ssh2 sees a connection only once its client has spoken.
  const guard = createLoginGuard({
    loginTimeoutMs: options.loginTimeoutMs, maxPending: options.maxUnauthenticated, log: options.log,
    admit: (socket) => server.injectSocket(socket),
  });
  const listener = guard.server;
  return {
    listen: (port, host) => new Promise((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => resolve((listener.address() as AddressInfo).port));
    }),
    close: async () => {
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      guard.dropPending();
      for (const end of live) end();
      await closed;
    },
  };
}

/** Serves one client connection; returns what ends it from the host's side. */
function handleConnection(options: SshServerOptions, client: Connection, ip: string): () => void {
  const { log } = options;
  let grant: Allowed | undefined;
  let jobId = '';
  let endedBy: EndedBy = 'client';
  let failures = 0;
  let watch: NodeJS.Timeout | undefined;
  const channels = new Set<SandboxShell>();
  const endAll = (by: EndedBy): void => {
    endedBy = by;
    for (const shell of channels) void shell.kill();
    client.end();
  };
  client.on('error', (err) => log.debug({ err: err.message, client: ip }, 'ssh connection error'));
  client.on('authentication', (ctx) => {
    const refuse = (): void => {
      failures += 1;
      if (failures >= MAX_AUTH_ATTEMPTS) client.end();
      else ctx.reject(['publickey']);
    };
    if (ctx.method !== 'publickey') return refuse();
    const key = offeredKey(options, ctx, ip);
    if (!key) return refuse();
    // A query without a signature: the key is acceptable so far; the client proves it holds the private half before the API is asked.
    if (!ctx.signature) return ctx.accept();
    void authorize(options, ctx, key, ip).then((answer) => {
      if (!answer) return refuse();
      grant = answer;
      jobId = ctx.username;
      ctx.accept();
    }, (err: unknown) => {
      log.warn({ err: (err as Error).message, client: ip }, 'ssh authentication could not be decided');
      refuse();
    });
  });
  client.on('ready', () => {
    const allowed = grant!;
    log.info({ event: 'agent_ssh_session_opened', session_id: allowed.session_id, user_id: allowed.user_id, fingerprint: allowed.fingerprint, client: ip }, 'ssh session opened');
    watch = setInterval(() => {
      void options.docker.getContainer(allowed.container_name).inspect().then(
        (info) => { if (!info.State.Running) endAll('sandbox'); },
        (err: { statusCode?: number }) => { if (err.statusCode === 404) endAll('sandbox'); },
      );
    }, SANDBOX_WATCH_MS);
    client.on('session', (accept, reject) => {
      if (channels.size >= MAX_CHANNELS) return reject();
      serveSession({
        docker: options.docker, log, containerName: allowed.container_name, uid: allowed.uid, shells: channels,
        onCommandEnded: () => { if (endedBy === 'client') endedBy = 'command'; },
      }, accept());
    });
  });
  client.on('close', () => {
    if (watch) clearInterval(watch);
    for (const shell of channels) void shell.kill();
    if (!grant) return;
    const { session_id: sessionId } = grant;
    void options.api.sshSessionClose(sessionId, { job_id: jobId, ended_by: endedBy }).then(
      (closed) => log.info({ event: 'agent_ssh_session_closed', session_id: sessionId, ended_by: endedBy, duration_ms: closed.duration_ms }, 'ssh session closed'),
      (err: unknown) => log.warn({ session_id: sessionId, err: (err as Error).message }, 'ssh session close could not be reported'),
    );
  });
  return () => endAll('host');
}

/** The public key a `publickey` attempt for a chat id offers, parsed; undefined for any other attempt. */
function offeredKey(options: SshServerOptions, ctx: PublicKeyAuthContext, ip: string): ParsedKey | undefined {
  if (!SSH_JOB_ID_PATTERN.test(ctx.username)) {
    options.log.info({ event: 'agent_ssh_refused', reason: 'bad_user_name', client: ip }, 'ssh refused: the user name is not a chat id (job_…)');
    return undefined;
  }
  const key = utils.parseKey(ctx.key.data) as ParsedKey | ParsedKey[] | Error;
  return key instanceof Error || Array.isArray(key) ? undefined : key;
}

/** The API's grant for a signed attempt whose signature verifies; undefined: refused. */
async function authorize(options: SshServerOptions, ctx: PublicKeyAuthContext, key: ParsedKey, ip: string): Promise<Allowed | undefined> {
  if (!ctx.signature || !ctx.blob || key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return undefined;
  const answer = await options.api.sshSessionOpen({ job_id: ctx.username, public_key: ctx.key.data.toString('base64'), client_address: ip.slice(0, 64) });
  if (!answer.allowed) {
    options.log.info({ event: 'agent_ssh_refused', job_id: ctx.username, reason: answer.reason, client: ip }, 'ssh refused');
    return undefined;
  }
  return answer;
}
