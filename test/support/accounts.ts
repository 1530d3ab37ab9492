/**
 * Account helpers for tests: sign up, verify through the outbox, log in and create keys through
 * the gateway's own endpoints (nothing is inserted behind its back).
 */
import assert from 'node:assert/strict';
import type { Db } from '../../lib/db';
import { waitFor } from './wait';

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** The verification token in the newest `verify_email` message to `email`. */
export async function verificationToken(db: Db, email: string): Promise<string> {
  const row = await db('email_outbox').where({ recipient: email, kind: 'verify_email' }).orderBy('id', 'desc').first<{ body: string } | undefined>();
  const token = /token=([A-Za-z0-9_-]+)/.exec(row?.body ?? '')?.[1];
  assert.ok(token, `a verification message to ${email} is in the outbox`);
  return token;
}

export interface Session {
  accessToken: string;
  cookie: string;
}

/** Signs up (verifying when asked) and logs in; returns the access token and refresh cookie. */
export async function signUpAndLogIn(gatewayUrl: string, db: Db, email: string, password = 'correct horse battery'): Promise<Session> {
  const signup = await postJson(`${gatewayUrl}/auth/signup`, { email, password });
  assert.equal(signup.status, 201, await signup.clone().text());
  const created = (await signup.json()) as { email_verification_required: boolean };
  if (created.email_verification_required) {
    const verified = await postJson(`${gatewayUrl}/auth/verify-email`, { token: await verificationToken(db, email) });
    assert.equal(verified.status, 200);
  }
  return logIn(gatewayUrl, email, password);
}

export async function logIn(gatewayUrl: string, email: string, password: string): Promise<Session> {
  const login = await postJson(`${gatewayUrl}/auth/login`, { email, password });
  assert.equal(login.status, 200, await login.clone().text());
  const body = (await login.json()) as { access_token: string };
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { accessToken: body.access_token, cookie };
}

/** Creates an API key with the session's access token; returns the secret. */
export async function createKey(gatewayUrl: string, session: Session, name = 'test'): Promise<string> {
  const res = await postJson(`${gatewayUrl}/auth/api-keys`, { name }, { authorization: `Bearer ${session.accessToken}` });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { key: string }).key;
}

/** Polls `check` until it returns true (for changes other processes make); fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(check, what, timeoutMs);
}
