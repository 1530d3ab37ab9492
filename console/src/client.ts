/**
 * The console's one way to call the server. Every call goes to this origin (the gateway serves
 * the console and forwards the agent API: docs/one-origin.md) with the session's access token.
 *
 * - A 4xx/5xx becomes an `ApiError` carrying the server's message and, when it names one, the
 *   field (`param`), so forms can show it next to that field.
 * - An expired access token is renewed once through the refresh cookie (`POST /auth/refresh`);
 *   when that fails the call waits for the person to log in again (the shell shows the login
 *   dialog over the page, which stays mounted with its form), then is sent again.
 * - A network failure or a 502/503/504 marks that part of the server (the gateway, or the agent API
 *   it forwards to) unreachable with the server's reason: the shell says the console is read-only
 *   and action buttons are disabled until a call to that part succeeds again.
 */
import { useEffect, useState } from 'preact/hooks';

/** An error answer of the server (or of the network: status 0). */
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly code?: string, readonly param?: string) {
    super(message);
  }
}

/** The signed-in account (GET /auth/me). */
export interface Account {
  id: number;
  email: string;
  role: 'free' | 'pro' | 'internal' | 'admin';
  permissions: string[];
}

interface Session {
  token: string;
  account: Account;
}

type Listener = () => void;
const listeners = new Set<Listener>();
const notify = (): void => listeners.forEach((l) => l());

let storageKey = 'console.session';
let session: Session | undefined;
let expired = false;
/** A part of the server that does not answer (the gateway itself, or the agent API behind it), since when and why. */
export interface Outage {
  part: 'gateway' | 'agent API';
  since: number;
  reason: string;
}
const outages = new Map<Outage['part'], Outage>();
let waiters: Array<() => void> = [];

/** Namespaces the stored session (the branding's browser-storage namespace). */
export function setStorageNamespace(namespace: string): void {
  storageKey = `${namespace || 'console'}.session`;
  try {
    const stored = sessionStorage.getItem(storageKey);
    if (stored) session = JSON.parse(stored) as Session;
  } catch {
    session = undefined;
  }
  notify();
}

function store(next: Session | undefined): void {
  session = next;
  try {
    if (next) sessionStorage.setItem(storageKey, JSON.stringify(next));
    else sessionStorage.removeItem(storageKey);
  } catch {
    // Storage refused (private mode): the session lives in memory only.
  }
  notify();
}

/** The current account, undefined when signed out. */
export function currentAccount(): Account | undefined {
  return session?.account;
}

/** Whether the account may use the owner workspace (`agent.use`). */
export function canUseAgent(account: Account | undefined): boolean {
  return !!account && account.permissions.includes('agent.use');
}

/** Whether the account may open the admin console (role `admin`). */
export function isAdmin(account: Account | undefined): boolean {
  return account?.role === 'admin';
}

/** Whether the agent operator pages may be used (`agent.admin`, or role `admin`). */
export function isAgentAdmin(account: Account | undefined): boolean {
  return !!account && (account.role === 'admin' || account.permissions.includes('agent.admin'));
}

async function errorOf(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`;
  let code: string | undefined;
  let param: string | undefined;
  try {
    const body = (await res.json()) as { error?: { message?: unknown; code?: unknown; param?: unknown; type?: unknown } | string; message?: unknown };
    const error = typeof body.error === 'object' && body.error !== null ? body.error : undefined;
    if (error && typeof error.message === 'string') message = error.message;
    else if (typeof body.error === 'string') message = body.error;
    else if (typeof body.message === 'string') message = body.message;
    if (error && typeof error.code === 'string') code = error.code;
    if (error && typeof error.param === 'string') param = error.param;
  } catch {
    // Not JSON: keep the status line.
  }
  return new ApiError(res.status, message, code, param);
}

/** Which part of the server answers a path: the agent API's paths are forwarded by the gateway (docs/one-origin.md). */
export function partOf(path: string): Outage['part'] {
  return /^\/(v1\/agent|admin\/agent)(\/|\?|$)/.test(path) ? 'agent API' : 'gateway';
}

function markReachable(path: string, reason: string | undefined): void {
  const part = partOf(path);
  const before = outages.get(part);
  if (reason === undefined) {
    if (!before) return;
    outages.delete(part);
  } else {
    if (before?.reason === reason) return;
    outages.set(part, { part, since: before?.since ?? Date.now(), reason });
  }
  notify();
}

async function refresh(): Promise<boolean> {
  try {
    const res = await fetch('/auth/refresh', { method: 'POST', credentials: 'same-origin' });
    if (!res.ok) return false;
    const grant = (await res.json()) as { access_token: string };
    const account = await fetchAccount(grant.access_token);
    store({ token: grant.access_token, account });
    return true;
  } catch {
    return false;
  }
}

function waitForLogin(): Promise<void> {
  expired = true;
  notify();
  return new Promise((resolve) => waiters.push(resolve));
}

/** Options of one call. */
export interface CallOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  /** Answer the raw Response (downloads, streams) instead of parsed JSON. */
  raw?: boolean;
}

/** Calls the server; resolves with the parsed JSON body (undefined for 204). */
export async function api<T = unknown>(path: string, options: CallOptions = {}): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const headers: Record<string, string> = {};
    if (session) headers.authorization = `Bearer ${session.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(path, {
        method: options.method ?? 'GET', headers, signal: options.signal, credentials: 'same-origin',
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      markReachable(path, 'the server cannot be reached');
      throw new ApiError(0, 'The server cannot be reached');
    }
    if (res.status === 502 || res.status === 503 || res.status === 504) {
      const error = await errorOf(res.clone());
      markReachable(path, error.message);
    } else markReachable(path, undefined);
    if (res.status === 401 && session && attempt < 3) {
      if (!(await refresh())) await waitForLogin();
      continue;
    }
    if (!res.ok) throw await errorOf(res);
    if (options.raw) return res as T;
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

async function fetchAccount(token: string): Promise<Account> {
  const res = await fetch('/auth/me', { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as Account;
}

/** Signs in with e-mail and password; resumes calls that waited for it. */
export async function logIn(email: string, password: string): Promise<Account> {
  let res: Response;
  try {
    res = await fetch('/auth/login', {
      method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
  } catch {
    throw new ApiError(0, 'The server cannot be reached');
  }
  if (!res.ok) throw await errorOf(res);
  const grant = (await res.json()) as { access_token: string };
  const account = await fetchAccount(grant.access_token);
  store({ token: grant.access_token, account });
  expired = false;
  const resume = waiters;
  waiters = [];
  resume.forEach((w) => w());
  notify();
  return account;
}

/** Signs out: ends the refresh session and forgets the token. */
export async function logOut(): Promise<void> {
  try {
    await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin' });
  } finally {
    store(undefined);
    expired = false;
  }
}

/** Re-reads the account (role or permissions may have changed). */
export async function reloadAccount(): Promise<void> {
  if (!session) return;
  try {
    store({ token: session.token, account: await fetchAccount(session.token) });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && !(await refresh())) store(undefined);
  }
}

/** Session and connectivity state, re-rendering when either changes. */
export function useSession(): { account: Account | undefined; expired: boolean; unreachableSince: number | undefined; outages: Outage[]; token: string | undefined } {
  const [, tick] = useState(0);
  useEffect(() => {
    const listener = (): void => tick((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  const down = [...outages.values()];
  const unreachableSince = down.length ? Math.min(...down.map((o) => o.since)) : undefined;
  return { account: session?.account, expired, unreachableSince, outages: down, token: session?.token };
}

/** The access token, for the few calls that cannot go through `api` (EventSource is not used: see streams). */
export function accessToken(): string | undefined {
  return session?.token;
}
