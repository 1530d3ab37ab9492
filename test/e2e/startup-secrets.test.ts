/**
 * A secret shorter than its minimum stops the process at startup, naming the variable and
 * never showing the value. Run against the built entry points (`npm test` builds first): the
 * gateway, the control-plane API, the control worker and the host runner.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
const ENTRIES = ['dist/gateway/main.js', 'dist/api/main.js', 'dist/workers/control.js', 'dist/workers/host.js'];
const SECRETS = ['GATEWAY_GRANT_DISPATCH_TOKEN', 'AGENT_ONCALL_DISPATCH_TOKEN', 'AGENT_CONTROL_TOKEN_SECRET', 'AGENT_SOURCE_CONTROL_ENCRYPTION_KEY', 'AGENT_SETTINGS_ENCRYPTION_KEY'];

function run(entry: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    let output = '';
    // Ports and the database point nowhere: the check must stop the process before it reaches them.
    const child = spawn(process.execPath, [join(ROOT, entry)], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, GATEWAY_PORT: '1', API_PORT: '1', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', TEMPORAL_ADDRESS: '127.0.0.1:1', ...env },
    });
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('startup refuses short secrets (built processes)', function () {
  this.timeout(120_000);

  for (const entry of ENTRIES) {
    it(`${entry} stops naming each variable shorter than 32 bytes, without its value`, async () => {
      for (const name of SECRETS) {
        const value = `short-${name.toLowerCase()}`.slice(0, 31);
        const { code, output } = await run(entry, { [name]: value });
        assert.notEqual(code, 0, `${entry} with a short ${name} exited 0:\n${output}`);
        assert.match(output, new RegExp(`${name}: must be at least 32 bytes`), output);
        assert.ok(!output.includes(value), `${entry} printed the value of ${name}`);
      }
    });
  }
});
