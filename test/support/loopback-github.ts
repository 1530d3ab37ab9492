/**
 * One loopback GitHub for the tests: a real HTTP server on 127.0.0.1 serving both wires this
 * project uses, over one state of users, installations and repositories:
 * - the OAuth user wire of docs/source-control.md ("GitHub wire"): test/support/loopback-github-oauth.ts;
 * - the app wire of docs/forges.md ("The GitHub wire contract"): test/support/loopback-github-app.ts.
 * This module owns listening, closing, reading requests, JSON answers and the record of every
 * request. (Hostile answers are the conformance suite's own loopback server: test/support/forge-conformance.ts.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { AppWire } from './loopback-github-app';
import { OauthWire } from './loopback-github-oauth';

/** A GitHub user who can sign in to the OAuth app. */
export interface GithubUser {
  id: number;
  login: string;
  /** Installation id → full names of the repositories it grants this user. */
  installations: Record<number, string[]>;
}

/** A repository the source-control app is installed on, with the permissions the installation has. */
export interface GithubRepo { owner: string; name: string; defaultBranch: string; installationId: number; permissions: Record<string, 'read' | 'write'> }
/** A pull request of a repository (kept by `owner/name`). */
export interface GithubPull { number: number; head: string; base: string; title: string; body: string; draft: boolean; state: 'open' | 'closed' }
/** An installation token the app wire minted. */
export interface InstallationToken { token: string; installationId: number; repositories: string[]; permissions: Record<string, string>; expiresAt: Date }
/** One request as it arrived (`path` with its query; `body` parsed from JSON or a form). */
export interface GithubRequest { method: string; path: string; authorization?: string; body?: unknown }

/** The loopback GitHub as the tests see and change it. */
export interface LoopbackGithub {
  readonly url: string;
  /** The OAuth app's client credentials. */
  readonly clientId: string;
  readonly clientSecret: string;
  /** Users by login (add or change freely). */
  readonly users: Map<string, GithubUser>;
  /** The repositories the source-control app is installed on. */
  readonly repos: GithubRepo[];
  /** Pull requests by `owner/name`. */
  readonly pulls: Map<string, GithubPull[]>;
  /** Every installation token minted. */
  readonly tokens: InstallationToken[];
  /** Every request received, in order. */
  readonly requests: GithubRequest[];
  /** Lifetimes of the user tokens it issues from now on, seconds (GitHub: 28800 and 15897600). */
  ttl: { access: number; refresh: number };
  /** When set, every request gets 503 (the provider is down). */
  down: boolean;
  /** Delay of a refresh answer, ms. */
  refreshDelayMs: number;
  /** How many refresh grants were asked for, and how many spent a refresh token. */
  readonly counts: { refreshAsked: number; refreshGranted: number; tokenRequests: number };
  /** Every user access and refresh token it issued (to assert none is stored in clear). */
  readonly issued: string[];
  /** Invalidates every user token of `login` (the user revoked the app). */
  revoke(login: string): void;
  close(): Promise<void>;
}

export interface LoopbackGithubOptions {
  /** The only callback URL the OAuth app accepts. */
  redirectUri?: string;
  /** The source-control app: its id (the JWT's `iss`) and the public key its JWTs are verified with. */
  app?: { appId: string; publicKey: KeyObject };
  /** The repositories the app is installed on. */
  repos?: GithubRepo[];
}

/** One request as a wire handles it. */
export interface GithubCall {
  req: IncomingMessage;
  url: URL;
  /** The path's segments. */
  parts: string[];
  body: unknown;
  /** Answers `status` with `body` as JSON (no body when undefined). */
  answer: (status: number, body: unknown, headers?: Record<string, string>) => void;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return undefined;
  if ((req.headers['content-type'] ?? '').includes('x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text));
  return JSON.parse(text) as unknown;
}

function answerWith(res: ServerResponse): GithubCall['answer'] {
  return (status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(body === undefined ? '' : JSON.stringify(body));
  };
}

/** The server, its state, and the dispatch to the two wires; made by {@link startLoopbackGithub}. */
class LoopbackGithubServer implements LoopbackGithub {
  url = '';
  readonly clientId = 'Iv1.fakeclient';
  readonly clientSecret = 'fake-client-secret';
  readonly users = new Map<string, GithubUser>();
  readonly repos: GithubRepo[];
  readonly pulls = new Map<string, GithubPull[]>();
  readonly tokens: InstallationToken[] = [];
  readonly requests: GithubRequest[] = [];
  ttl = { access: 28_800, refresh: 15_897_600 };
  down = false;
  refreshDelayMs = 0;
  readonly counts = { refreshAsked: 0, refreshGranted: 0, tokenRequests: 0 };
  readonly issued: string[] = [];
  private readonly oauth: OauthWire;
  private readonly app: AppWire;
  private readonly server: Server = createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => answerWith(res)(500, { message: String(err) }));
  });

  constructor(options: LoopbackGithubOptions) {
    this.repos = options.repos ?? [];
    this.oauth = new OauthWire(this, options.redirectUri);
    this.app = new AppWire(this, options.app);
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  revoke(login: string): void {
    this.oauth.revoke(login);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://loopback');
    const body = await readBody(req);
    this.requests.push({ method: req.method ?? '', path: url.pathname + url.search, authorization: req.headers.authorization, body });
    const call: GithubCall = { req, url, parts: url.pathname.split('/').filter(Boolean), body, answer: answerWith(res) };
    if (this.down) return call.answer(503, { message: 'down' });
    if (await this.oauth.route(call)) return;
    if (this.app.route(call)) return;
    call.answer(404, { message: 'Not Found' });
  }
}

/** Starts the loopback GitHub (see the header) with the OAuth app's callback URL and the source-control app's installed repositories. */
export async function startLoopbackGithub(options: LoopbackGithubOptions = {}): Promise<LoopbackGithub> {
  const github = new LoopbackGithubServer(options);
  await github.listen();
  return github;
}
