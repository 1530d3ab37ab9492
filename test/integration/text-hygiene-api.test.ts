/**
 * Text hygiene at the control-plane API's door (docs/security.md), on real PostgreSQL: a NUL or an
 * unpaired surrogate in a typed body field (job prompt, model, title, env; turn prompt; owner
 * variable; host heartbeat; operator body) is a 400 naming the field and nothing is written; a
 * host's event batch is stored with the visible replacement instead; JSON deeper than the bound is
 * a 400; and a 20 MB `Connection: close` upload gets its 413 to a client that writes before it reads.
 */
import assert from 'node:assert/strict';
import { listEvents } from '../../agent/events/event-store';
import { enrollHost } from '../../agent/hosts/host-registry';
import { MAX_JSON_DEPTH } from '../../lib/text';
import { ADMIN_TOKEN } from '../support/admin';
import { createAttempt, createJob, createOwner, createTurn } from '../support/agent-records';
import { startTestApi, type TestApi } from '../support/api';
import { freshDatabase, type TestDatabase } from '../support/db';
import { sendLargeBody, statusOf } from '../support/raw-http';

const NUL = 'a\u0000b';
const LONE = 'a\ud800b';

interface ErrorBody { error: { message: string; param: string | null } }

describe('text hygiene: control-plane API bodies', function () {
  this.timeout(60_000);
  let t: TestDatabase;
  let api: TestApi;
  let ownerKey: string;
  let ownerId: number;
  let jobId: string;
  let host: { hostId: string; credential: string };

  before(async () => {
    t = await freshDatabase();
    api = await startTestApi({ db: t.db });
    ({ apiKey: ownerKey, userId: ownerId } = await createOwner(t.db));
    host = await enrollHost(t.db, 'hygiene-host');
    jobId = await createJob(t.db, ownerId, host.hostId);
  });
  after(async () => {
    await api?.close();
    await t?.drop();
  });

  const send = (method: string, path: string, body: unknown, token: string) => fetch(`${api.url}${path}`, {
    method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });

  /** Sends each body and asserts a 400 whose message and `param` name the field. */
  async function assertRefused(method: string, path: string, token: string, cases: Array<[unknown, string]>): Promise<void> {
    for (const [body, field] of cases) {
      const res = await send(method, path, body, token);
      const text = await res.text();
      assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body).slice(0, 120)}: ${text}`);
      const { error } = JSON.parse(text) as ErrorBody;
      assert.equal(error.param, field, text);
      assert.ok(error.message.startsWith(`Invalid field '${field}': must not contain`), text);
    }
  }

  const count = async (table: string, where: Record<string, unknown> = {}) =>
    Number(((await t.db(table).where(where).count<Array<{ count: string }>>('* as count'))[0]!).count);

  it('refuses a NUL or an unpaired surrogate in job fields with 400 naming the field, and creates nothing', async () => {
    const jobs = await count('agent_jobs');
    const turns = await count('agent_turns');
    const job = { prompt: 'do it', model: 'm', repo: null };
    await assertRefused('POST', '/v1/agent/jobs', ownerKey, [
      [{ ...job, prompt: NUL }, 'prompt'],
      [{ ...job, prompt: LONE }, 'prompt'],
      [{ ...job, model: NUL }, 'model'],
      [{ ...job, model: LONE }, 'model'],
      [{ ...job, title: NUL }, 'title'],
      [{ ...job, title: '\udc00' }, 'title'],
      [{ ...job, env: { GOOD: 'x', TOKEN: NUL } }, 'env.TOKEN'],
      [{ ...job, env: { TOKEN: LONE } }, 'env.TOKEN'],
    ]);
    await assertRefused('POST', `/v1/agent/jobs/${jobId}/turns`, ownerKey, [[{ prompt: NUL }, 'prompt'], [{ prompt: LONE }, 'prompt']]);
    assert.equal(await count('agent_jobs'), jobs);
    assert.equal(await count('agent_turns'), turns);
  });

  it('refuses a bad owner variable value and leaves the variables as they were', async () => {
    const ok = await send('PUT', '/v1/agent/variables/API_TOKEN', { value: 'first' }, ownerKey);
    assert.equal(ok.status, 200, await ok.text());
    const before = await t.db('agent_owner_variables').where({ user_id: ownerId }).select('name', 'value');
    await assertRefused('PUT', '/v1/agent/variables/API_TOKEN', ownerKey, [[{ value: NUL }, 'value'], [{ value: LONE }, 'value']]);
    await assertRefused('PUT', '/v1/agent/variables/OTHER', ownerKey, [[{ value: NUL }, 'value']]);
    assert.deepEqual(await t.db('agent_owner_variables').where({ user_id: ownerId }).select('name', 'value'), before);
  });

  it('refuses bad heartbeat fields and keeps the host row unchanged', async () => {
    const beat = { slots_total: 2, runtime: 'docker', runner_version: '2', capabilities: ['git'] };
    const path = `/v1/agent/hosts/${host.hostId}/heartbeat`;
    const row = () => t.db('agent_hosts').where({ host_id: host.hostId }).first('slots_total', 'runtime', 'runner_version', 'capabilities', 'last_heartbeat_at');
    const before: unknown = await row();
    await assertRefused('POST', path, host.credential, [
      [{ ...beat, runtime: NUL }, 'runtime'],
      [{ ...beat, runner_version: LONE }, 'runner_version'],
      [{ ...beat, capabilities: ['git', NUL] }, 'capabilities.1'],
    ]);
    assert.deepEqual(await row(), before);
  });

  it("refuses a bad key in an operator's body, naming it with the visible replacement", async () => {
    const path = `/admin/agent/runner-hosts/${host.hostId}/slots`;
    const before: unknown = await t.db('agent_hosts').where({ host_id: host.hostId }).first('slots_saved');
    const res = await send('PUT', path, `{"slots":4,"x\\u0000":1}`, ADMIN_TOKEN);
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as ErrorBody).error.param, 'x\uFFFD');
    assert.deepEqual(await t.db('agent_hosts').where({ host_id: host.hostId }).first('slots_saved'), before);
  });

  it('stores a host event batch with NUL and lone surrogates replaced by U+FFFD, keys included', async () => {
    const turnId = await createTurn(t.db, jobId, 1);
    const attemptId = await createAttempt(t.db, { jobId, turnId, hostId: host.hostId });
    const res = await send('POST', `/v1/agent/hosts/${host.hostId}/attempts/${attemptId}/events`, {
      events: [{ seq: 0, event_type: 'tool_result', payload: { tool_use_id: 'tu1', output: `bin${NUL}${LONE}`, [`k${NUL}`]: 1 } }],
    }, host.credential);
    assert.equal(res.status, 200, await res.clone().text());
    const [stored] = await listEvents(t.db, jobId, 0, 10);
    assert.deepEqual(stored?.payload, { tool_use_id: 'tu1', output: 'bina\uFFFDba\uFFFDb', 'ka\uFFFDb': 1 });
  });

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels with 400`, async () => {
    const deep = `{"prompt":"x","model":"m","repo":null,"env":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const res = await send('POST', '/v1/agent/jobs', deep, ownerKey);
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as ErrorBody).error.message, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`));
  });

  for (const framing of ['declared', 'chunked'] as const) {
    it(`answers a 20 MB Connection: close upload (${framing} length) with a 413 the client reads`, async () => {
      const outcome = await sendLargeBody({ url: api.url, path: '/v1/agent/jobs', bytes: 20 * 1024 * 1024, framing, headers: { authorization: `Bearer ${ownerKey}` } });
      assert.equal(outcome.error, undefined, `the client was cut off: ${outcome.error} after ${JSON.stringify(outcome.response.slice(0, 80))}`);
      assert.equal(statusOf(outcome.response), 413, outcome.response.slice(0, 200));
      assert.match(outcome.response, /\r\nconnection: close\r\n/i);
      assert.match(outcome.response, /larger than 262144 bytes/);
      const alive = await fetch(`${api.url}/v1/agent/jobs`, { headers: { authorization: `Bearer ${ownerKey}` } });
      assert.equal(alive.status, 200);
    });
  }
});
