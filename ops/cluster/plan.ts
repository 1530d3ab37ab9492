/**
 * The cluster shape on one machine, as data: which processes `npm run cluster` runs, each with its
 * own port (where it listens), environment, log file and pid file under the cluster directory
 * (`.data/cluster/` unless `CLUSTER_DIR` is set). Pure: no process is started here.
 */
import { join } from 'node:path';

export type MemberKind = 'gateway' | 'api' | 'balancer' | 'control' | 'host';

/** How a member shows it is ready: `/health` answering 200, or a pino line with this message in its log. */
export type MemberReadiness = { health: string } | { logMessage: string };

export interface MemberSpec {
  name: string;
  kind: MemberKind;
  command: string;
  args: string[];
  /** Added to the cluster's shared environment. */
  env: Record<string, string>;
  /** The port it listens on (workers listen on none). */
  port?: number;
  ready: MemberReadiness;
  /** The execution host a host runner is (its task queue is `host:<hostId>`). */
  hostId?: string;
}

export interface ClusterPlanInput {
  root: string;
  dir: string;
  /** The load balancer's port: what clients, sandboxes and consoles use as the gateway. */
  balancerPort: number;
  gatewayPorts: readonly number[];
  apiPort: number;
  hosts: ReadonlyArray<{ hostId: string; credential: string }>;
  controlWorkers: number;
  /** Appended to the API's and the gateways' trusted proxies (an operator's own list is kept). */
  trustedProxies?: string;
  workflowBundle: string;
}

export const memberLog = (dir: string, name: string): string => join(dir, `${name}.log`);
export const memberPidFile = (dir: string, name: string): string => join(dir, `${name}.pid`);
export const haproxyConfigFile = (dir: string): string => join(dir, 'haproxy.cfg');
export const haproxySocket = (dir: string): string => join(dir, 'haproxy.sock');

const health = (port: number): MemberReadiness => ({ health: `http://127.0.0.1:${port}/health` });
const node = (root: string, script: string): Pick<MemberSpec, 'command' | 'args'> => ({ command: process.execPath, args: ['--enable-source-maps', join(root, script)] });

/**
 * The members in start order. Servers first (API, gateways, the balancer once a gateway answers),
 * then the workers, which call them: control workers one after the other (each creates or updates
 * the Schedules at start), host runners together.
 */
export function clusterPlan(input: ClusterPlanInput): MemberSpec[][] {
  const apiUrl = `http://127.0.0.1:${input.apiPort}`;
  const balancerUrl = `http://127.0.0.1:${input.balancerPort}`;
  const trusted = [input.trustedProxies, '127.0.0.1'].filter(Boolean).join(',');
  const api: MemberSpec = {
    name: 'api', kind: 'api', ...node(input.root, 'dist/api/main.js'), port: input.apiPort, ready: health(input.apiPort),
    // The API checks a new chat's model with the gateway: through the balancer, as every client.
    env: { API_HOST: '127.0.0.1', API_PORT: String(input.apiPort), TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: trusted, AGENT_GATEWAY_URL: balancerUrl },
  };
  const gateways: MemberSpec[] = input.gatewayPorts.map((port, i) => ({
    name: `gateway-${i + 1}`, kind: 'gateway', ...node(input.root, 'dist/gateway/main.js'), port, ready: health(port),
    env: {
      GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: String(port), GATEWAY_AGENT_API_URL: apiUrl,
      // Each gateway its own request-log journal: a restarted gateway replays what its predecessor left.
      REQUEST_LOG_SPOOL_DIR: join(input.dir, `gateway-${i + 1}`, 'request-log-spool'),
      // HAProxy is the peer; it says who the client is in X-Forwarded-For.
      TRUST_PROXY_HEADERS: '1', TRUSTED_PROXIES: trusted,
    },
  }));
  const balancer: MemberSpec = {
    name: 'haproxy', kind: 'balancer', command: 'haproxy', args: ['-db', '-f', haproxyConfigFile(input.dir)], env: {},
    port: input.balancerPort, ready: health(input.balancerPort),
  };
  const workerEnv = { AGENT_API_URL: apiUrl, AGENT_GATEWAY_URL: balancerUrl };
  const controls: MemberSpec[] = Array.from({ length: input.controlWorkers }, (_, i) => ({
    name: `control-${i + 1}`, kind: 'control', ...node(input.root, 'dist/workers/control.js'), ready: { logMessage: 'control worker polling' },
    env: { ...workerEnv, TEMPORAL_WORKFLOW_BUNDLE_PATH: input.workflowBundle },
  }));
  const hosts: MemberSpec[] = input.hosts.map((host, i) => ({
    name: `host-${i + 1}`, kind: 'host', ...node(input.root, 'dist/workers/host.js'), ready: { logMessage: 'host runner polling' }, hostId: host.hostId,
    env: {
      ...workerEnv, AGENT_HOST_ID: host.hostId, AGENT_HOST_CREDENTIAL: host.credential,
      // Two real hosts would not share disks or relay sockets either.
      AGENT_SANDBOX_DISK_DIR: join(input.dir, `host-${i + 1}`, 'sandbox-disks'),
      AGENT_RELAY_DIR: join(input.dir, `host-${i + 1}`, 'relay'),
    },
  }));
  return [[api, ...gateways], [balancer], ...controls.map((c) => [c]), hosts];
}
