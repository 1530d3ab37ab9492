/**
 * The cluster's HAProxy configuration and the reading of its statistics (ops/cluster/haproxy.ts),
 * checked by HAProxy itself: `haproxy -c` validates the generated configuration.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { haproxyConfig, parseShowStat } from '../../../../ops/cluster/haproxy';
import { clusterPlan } from '../../../../ops/cluster/plan';

describe('ops/cluster: HAProxy configuration and statistics', () => {
  const dir = mkdtempSync(join(tmpdir(), 'haproxy-cfg-'));
  const config = haproxyConfig({ listenPort: 18080, statsSocket: join(dir, 'haproxy.sock'), gateways: [{ name: 'gateway-1', port: 18180 }, { name: 'gateway-2', port: 18181 }] });

  it('checks each gateway on /health and retries only a refused connection', () => {
    assert.match(config, /bind 127\.0\.0\.1:18080/);
    assert.match(config, /option httpchk GET \/health/);
    assert.match(config, /server gateway-1 127\.0\.0\.1:18180 check/);
    assert.match(config, /server gateway-2 127\.0\.0\.1:18181 check/);
    assert.match(config, /retries 1/);
    assert.doesNotMatch(config, /retry-on/, 'HAProxy\'s default: connection failures only');
  });

  it('is a configuration HAProxy accepts (haproxy -c)', () => {
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(file, config);
    const check = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
    assert.ifError(check.error); // HAProxy is a test package (ops/dev/packages.ts): missing, this fails
    assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);
  });

  it('reads each gateway\'s state from `show stat` and ignores the frontend and backend rows', () => {
    const csv = [
      '# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight',
      'gateways,FRONTEND,,,0,1,4096,10,0,0,0,0,0,,,,,OPEN,',
      'gateway_pool,gateway-1,0,0,0,1,,5,0,0,,0,,0,0,0,0,UP,1',
      'gateway_pool,gateway-2,0,0,0,1,,5,0,0,,0,,0,0,0,0,DOWN,1',
      'gateway_pool,BACKEND,0,0,0,1,410,10,0,0,0,0,,0,0,0,0,UP,1',
      '',
    ].join('\n');
    assert.deepEqual([...parseShowStat(csv)], [['gateway-1', 'UP'], ['gateway-2', 'DOWN']]);
    assert.equal(parseShowStat('').size, 0);
  });

  it('gives each gateway its own journal and each host its own disks, relay and task queue', () => {
    const phases = clusterPlan({
      root: '/r', dir: '/c', balancerPort: 8080, gatewayPorts: [8180, 8181], apiPort: 8081, controlWorkers: 2, workflowBundle: '/r/b.js',
      hosts: [{ hostId: 'm-1', credential: 'c1' }, { hostId: 'm-2', credential: 'c2' }],
    });
    const members = phases.flat();
    assert.deepEqual(phases.map((p) => p.map((m) => m.name)), [['api', 'gateway-1', 'gateway-2'], ['haproxy'], ['control-1'], ['control-2'], ['host-1', 'host-2']]);
    const spools = members.filter((m) => m.kind === 'gateway').map((m) => m.env.REQUEST_LOG_SPOOL_DIR);
    assert.equal(new Set(spools).size, 2);
    const hosts = members.filter((m) => m.kind === 'host');
    assert.deepEqual(hosts.map((h) => h.env.AGENT_HOST_ID), ['m-1', 'm-2']);
    assert.equal(new Set(hosts.map((h) => h.env.AGENT_SANDBOX_DISK_DIR)).size, 2);
    assert.ok(members.filter((m) => m.kind !== 'gateway' && m.kind !== 'api' && m.kind !== 'balancer').every((m) => m.env.AGENT_GATEWAY_URL === 'http://127.0.0.1:8080'), 'workers reach inference through the balancer');
  });
});
