/**
 * Admin API calls for tests: JSON in and out with the admin token, and the shared checks every
 * admin endpoint family runs (401 without or with a wrong token; 500 without a database).
 */
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from './gateway';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface AdminResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
}

/**
 * Calls an admin endpoint of a gateway or an API (with the admin token unless `token` is given;
 * `null` sends none). A string body is sent as it is (malformed JSON), anything else as JSON.
 */
export async function admin<T = Record<string, unknown>>(gw: Pick<TestGateway, 'url'>, method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN): Promise<AdminResponse<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const sent = body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) };
  const response = await fetch(`${gw.url}${path}`, { method, headers, ...sent });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as T };
}

/** The error message of an error response. */
export function errorOf(response: AdminResponse): { message: string; param: string | null } {
  return (response.body as { error: { message: string; param: string | null } }).error;
}

/** Asserts a 400 whose error names `field`. */
export function assertInvalid(response: AdminResponse, field: string): void {
  assert.equal(response.status, 400, JSON.stringify(response.body));
  const error = errorOf(response);
  assert.ok(error.message.includes(field) || error.param === field, `error names '${field}': ${JSON.stringify(error)}`);
}

/** An admin call of an endpoint family, used for the shared auth and no-database checks. */
export interface EndpointCase {
  method: string;
  path: string;
  body?: unknown;
}

/** 401 without a token and with a wrong token, for every case. */
export async function assertAdminAuth(gw: TestGateway, cases: readonly EndpointCase[]): Promise<void> {
  for (const c of cases) {
    const none = await admin(gw, c.method, c.path, c.body, null);
    assert.equal(none.status, 401, `${c.method} ${c.path} without a token`);
    const wrong = await admin(gw, c.method, c.path, c.body, 'wrong-token');
    assert.equal(wrong.status, 401, `${c.method} ${c.path} with a wrong token`);
  }
}

/** 500 `Database not configured` on a gateway started without a database, for every case. */
export async function assertNoDatabase(gwWithoutDb: TestGateway, cases: readonly EndpointCase[]): Promise<void> {
  for (const c of cases) {
    const response = await admin(gwWithoutDb, c.method, c.path, c.body);
    assert.equal(response.status, 500, `${c.method} ${c.path} without a database`);
    assert.equal(errorOf(response).message, 'Database not configured');
  }
}

/**
 * The checks every admin endpoint family shares: 401 without or with a wrong token on `gw`, and
 * 500 `Database not configured` on a second gateway started without a database from `modelsYaml`.
 */
export async function assertGuarded(gw: TestGateway, cases: readonly EndpointCase[], modelsYaml: string): Promise<void> {
  await assertAdminAuth(gw, cases);
  const noDb = await startTestGateway({ modelsYaml, env: { ADMIN_TOKEN } });
  try {
    await assertNoDatabase(noDb, cases);
  } finally {
    await noDb.close();
  }
}
