import assert from 'node:assert/strict';
import { AppError } from '../../lib/errors';
import {
  BUILTIN_ADAPTER_KINDS,
  DEFAULT_SUPPORTED_PARAMS,
  KeyPool,
  UnknownAdapterKindError,
  buildChatBody,
  buildEmbeddingsBody,
  chatCompletionsUrl,
  createAdapterKindRegistry,
  embeddingsUrl,
  resolveAdapterKind,
  responsesUrlFor,
  upstreamHeaders,
  type WireRoute,
} from '../../gateway/adapters';

const DIRECT_KINDS = ['engine_a', 'engine_b', 'engine_c'];
const VERSIONED_KINDS = [
  'generic_compat', 'staging', 'hosted_a', 'hosted_b', 'cliproxy', 'vendor_a', 'vendor_d', 'vendor_b',
  'aggregator', 'aggregator[some-provider]',
];
const MESSAGE_FORMAT_KINDS = ['vendor_g_api', 'vendor_h_cloud', 'vendor_h_direct'];

/** [base URL, expected for `direct` kinds, expected for `versioned` kinds] */
const CHAT_CASES: ReadonlyArray<readonly [string, string, string]> = [
  ['http://h:8000', 'http://h:8000/chat/completions', 'http://h:8000/v1/chat/completions'],
  ['http://h:8000/', 'http://h:8000/chat/completions', 'http://h:8000/v1/chat/completions'],
  ['http://h:8000///', 'http://h:8000/chat/completions', 'http://h:8000/v1/chat/completions'],
  ['http://h:8000/v1', 'http://h:8000/v1/chat/completions', 'http://h:8000/v1/chat/completions'],
  ['http://h:8000/v1/', 'http://h:8000/v1/chat/completions', 'http://h:8000/v1/chat/completions'],
  ['http://h:8000/v1///', 'http://h:8000/v1/chat/completions', 'http://h:8000/v1/chat/completions'],
  ['https://api.example.com/openai', 'https://api.example.com/openai/chat/completions', 'https://api.example.com/openai/v1/chat/completions'],
  ['https://api.example.com/openai/v2/', 'https://api.example.com/openai/v2/chat/completions', 'https://api.example.com/openai/v2/chat/completions'],
];

function route(overrides: Partial<WireRoute> = {}): WireRoute {
  return {
    kind: 'generic_compat',
    providerModelId: 'org/model-7b',
    maxOutputLength: 1000,
    supportsTools: false,
    priorityScheduling: false,
    ...overrides,
  };
}

const messages = [{ role: 'user', content: 'hi' }];
const plain = { stream: false, tier: 'interactive' } as const;

function assertAppError(fn: () => unknown, code: string, status: number, pattern: RegExp, param?: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.code, code);
    assert.equal(err.status, status);
    assert.match(err.message, pattern);
    if (param !== undefined) assert.equal(err.param, param);
    return true;
  });
}

describe('adapters: kinds', () => {
  it('knows every built-in kind, and the URL tables cover all buildable ones', () => {
    const tabled = [...DIRECT_KINDS, 'vendor_c', ...VERSIONED_KINDS.filter((k) => !k.includes('[')), ...MESSAGE_FORMAT_KINDS];
    assert.deepEqual([...tabled].sort(), [...BUILTIN_ADAPTER_KINDS].sort());
    for (const kind of [...tabled, 'aggregator[some-provider]']) assert.equal(resolveAdapterKind(kind).kind, kind);
  });

  it('staging is a clone of generic_compat with its own label', () => {
    const generic = resolveAdapterKind('generic_compat');
    const staging = resolveAdapterKind('staging');
    assert.deepEqual({ ...staging, kind: 'x', label: 'x' }, { ...generic, kind: 'x', label: 'x' });
    assert.notEqual(staging.label, generic.label);
  });

  it('marks the usage-profile vendors and the families', () => {
    for (const kind of ['vendor_a', 'vendor_d', 'vendor_b']) assert.equal(resolveAdapterKind(kind).usageProfile, true, kind);
    assert.equal(resolveAdapterKind('engine_a').usageProfile, false);
    assert.equal(resolveAdapterKind('aggregator').family, 'aggregator');
    assert.equal(resolveAdapterKind('aggregator[x]').pinnedProvider, 'x');
    assert.equal(resolveAdapterKind('aggregator').pinnedProvider, undefined);
    for (const kind of MESSAGE_FORMAT_KINDS) assert.equal(resolveAdapterKind(kind).family, 'message_format');
  });

  it('rejects unknown kinds with ValueError: Unknown adapter kind: <kind>', () => {
    for (const kind of ['nope', 'aggregator[]', 'aggregator[bad slug]', 'Generic_compat', 'engine_a ']) {
      assert.throws(() => resolveAdapterKind(kind, createAdapterKindRegistry()), (err: unknown) => {
        assert.ok(err instanceof UnknownAdapterKindError);
        assert.ok(err instanceof Error);
        assert.equal(err.name, 'ValueError');
        assert.equal(err.message, `Unknown adapter kind: ${kind}`);
        assert.equal(String(err), `ValueError: Unknown adapter kind: ${kind}`);
        return true;
      });
    }
    assert.throws(() => chatCompletionsUrl('nope', 'http://h'), /^ValueError: Unknown adapter kind: nope$/);
  });

  it('checks extension kinds first: new kinds resolve and built-in names can be replaced', () => {
    const registry = createAdapterKindRegistry();
    assert.throws(() => registry.resolve('engine_z'), UnknownAdapterKindError);
    registry.register('engine_z', { label: 'Engine Z', chatPathStyle: 'direct' });
    assert.equal(registry.resolve('engine_z').label, 'Engine Z');
    assert.equal(chatCompletionsUrl('engine_z', 'http://h:1/', registry), 'http://h:1/chat/completions');
    assert.equal(registry.resolve('generic_compat').label, resolveAdapterKind('generic_compat').label);
    registry.register('vendor_g_api', { label: 'Vendor G via extension' });
    assert.equal(registry.resolve('vendor_g_api').family, 'compat');
    assert.doesNotThrow(() => buildChatBody(route({ kind: 'vendor_g_api' }), { messages }, { ...plain, registry }));
    assert.throws(() => registry.register('engine_z'), /already registered/);
    // Fresh registries and the shared one are unaffected.
    assert.throws(() => createAdapterKindRegistry().resolve('engine_z'), UnknownAdapterKindError);
    assert.throws(() => resolveAdapterKind('engine_z'), UnknownAdapterKindError);
  });

  it('message-format kinds build messages-API bodies and answer 501 for embeddings', () => {
    for (const kind of MESSAGE_FORMAT_KINDS) {
      const body = buildChatBody(route({ kind }), { messages }, plain);
      assert.deepEqual(body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], kind);
      assert.equal(body.max_tokens, 1000, kind);
      assertAppError(() => buildEmbeddingsBody(route({ kind }), { input: 'x' }), 'not_implemented', 501, new RegExp(`^Adapter kind ${kind} serves no embeddings$`));
    }
  });
});

describe('adapters: URLs', () => {
  for (const [base, direct, versioned] of CHAT_CASES) {
    it(`joins chat completions onto ${base}`, () => {
      for (const kind of DIRECT_KINDS) assert.equal(chatCompletionsUrl(kind, base), direct, kind);
      for (const kind of VERSIONED_KINDS) assert.equal(chatCompletionsUrl(kind, base), versioned, kind);
    });
  }

  it('vendor_c appends /chat/completions under /api/paas/v4 without another version', () => {
    for (const base of ['https://open.example.cn/api/paas/v4', 'https://open.example.cn/api/paas/v4/', 'https://open.example.cn/api/paas/v4//']) {
      assert.equal(chatCompletionsUrl('vendor_c', base), 'https://open.example.cn/api/paas/v4/chat/completions', base);
    }
  });

  it('joins the Responses-API path as the chat path, /responses in place of /chat/completions (upstream_api: responses)', () => {
    for (const [base, direct, versioned] of CHAT_CASES) {
      for (const kind of DIRECT_KINDS) assert.equal(responsesUrlFor(resolveAdapterKind(kind), base), direct.replace(/\/chat\/completions$/, '/responses'), kind);
      for (const kind of VERSIONED_KINDS) assert.equal(responsesUrlFor(resolveAdapterKind(kind), base), versioned.replace(/\/chat\/completions$/, '/responses'), kind);
    }
  });

  const embeddingCases: ReadonlyArray<readonly [string, string | null | undefined, string]> = [
    ['http://h:8000', undefined, 'http://h:8000/v1/embeddings'],
    ['http://h:8000/', null, 'http://h:8000/v1/embeddings'],
    ['http://h:8000///', '', 'http://h:8000/v1/embeddings'],
    ['http://h:8000/v1', undefined, 'http://h:8000/v1/embeddings'],
    ['http://h:8000/v1/', undefined, 'http://h:8000/v1/embeddings'],
    ['http://h:8000/v1///', undefined, 'http://h:8000/v1/embeddings'],
    ['http://h:8000/v2', undefined, 'http://h:8000/v2/v1/embeddings'],
    ['http://h:8000', 'embeddings', 'http://h:8000/embeddings'],
    ['http://h:8000/', '/embeddings', 'http://h:8000/embeddings'],
    ['http://h:8000/v1//', 'embeddings', 'http://h:8000/v1/embeddings'],
    ['https://x.example/api/paas/v4/', '/embeddings', 'https://x.example/api/paas/v4/embeddings'],
    ['https://x.example/base', 'v2/embed', 'https://x.example/base/v2/embed'],
  ];
  for (const [base, path, expected] of embeddingCases) {
    it(`joins embeddings onto ${base} with path ${String(path)}`, () => {
      assert.equal(embeddingsUrl(base, path), expected);
    });
  }
});

describe('adapters: chat wire body', () => {
  it('sends provider_model_id as model and the core fields, and leaves the client object alone', () => {
    const client = { model: 'public-name', messages, stream: true, temperature: 0.2 };
    const snapshot = structuredClone(client);
    const body = buildChatBody(route(), client, plain);
    assert.deepEqual(body, { model: 'org/model-7b', messages, stream: false, temperature: 0.2 });
    assert.deepEqual(client, snapshot);
  });

  it('sets stream_options.include_usage when streaming and drops it otherwise', () => {
    const client = { messages, stream_options: { include_usage: false, other: 1 } };
    const streamed = buildChatBody(route(), client, { stream: true, tier: 'interactive' });
    assert.equal(streamed.stream, true);
    assert.deepEqual(streamed.stream_options, { include_usage: true });
    const unstreamed = buildChatBody(route({ extraBody: { stream_options: { include_usage: true } } }), client, plain);
    assert.equal('stream_options' in unstreamed, false);
  });

  it('clamps max_tokens and max_completion_tokens to max_output_length', () => {
    const r = route({ supportedParams: ['max_tokens', 'max_completion_tokens'] });
    assert.deepEqual(buildChatBody(r, { messages, max_tokens: 5000, max_completion_tokens: 1001 }, plain),
      { model: 'org/model-7b', messages, stream: false, max_tokens: 1000, max_completion_tokens: 1000 });
    assert.equal(buildChatBody(r, { messages, max_tokens: 10 }, plain).max_tokens, 10);
    assert.equal('max_tokens' in buildChatBody(r, { messages }, plain), false);
    assertAppError(() => buildChatBody(r, { messages, max_tokens: '99' }, plain), 'invalid_request', 400, /max_tokens/, 'max_tokens');
    // Not supported: dropped, not clamped.
    assert.equal('max_completion_tokens' in buildChatBody(route(), { messages, max_completion_tokens: 9 }, plain), false);
  });

  it('forwards only supported optional params (default temperature, top_p, max_tokens) and drops others silently', () => {
    assert.deepEqual([...DEFAULT_SUPPORTED_PARAMS], ['temperature', 'top_p', 'max_tokens']);
    const client = { messages, temperature: 1, top_p: 0.9, max_tokens: 5, seed: 7, logit_bias: {}, user: 'u' };
    assert.deepEqual(buildChatBody(route(), client, plain),
      { model: 'org/model-7b', messages, stream: false, temperature: 1, top_p: 0.9, max_tokens: 5 });
    assert.deepEqual(buildChatBody(route({ supportedParams: ['seed'] }), client, plain),
      { model: 'org/model-7b', messages, stream: false, seed: 7 });
  });

  it('accepts reasoning_effort only when supported and listed, naming the allowed values otherwise', () => {
    const r = route({ supportedParams: ['reasoning_effort'], reasoningEfforts: ['low', 'high'] });
    assert.equal(buildChatBody(r, { messages, reasoning_effort: 'high' }, plain).reasoning_effort, 'high');
    assertAppError(() => buildChatBody(r, { messages, reasoning_effort: 'medium' }, plain),
      'invalid_request', 400, /Allowed values: low, high/, 'reasoning_effort');
    assertAppError(() => buildChatBody(route({ reasoningEfforts: ['low'] }), { messages, reasoning_effort: 'low' }, plain),
      'invalid_request', 400, /reasoning_effort/, 'reasoning_effort');
    assertAppError(() => buildChatBody(route({ supportedParams: ['reasoning_effort'] }), { messages, reasoning_effort: 'low' }, plain),
      'invalid_request', 400, /Allowed values: none/, 'reasoning_effort');
    assert.equal('reasoning_effort' in buildChatBody(r, { messages, reasoning_effort: null }, plain), false);
  });

  it('always drops a client priority and stamps the tier priority on priority_scheduling routes', () => {
    const client = { messages, priority: -100 };
    assert.equal('priority' in buildChatBody(route({ supportedParams: ['priority'] }), client, plain), false);
    const r = route({ priorityScheduling: true });
    const expected = { interactive: 20, large: 15, elephant: 0 } as const;
    for (const tier of ['interactive', 'large', 'elephant'] as const) {
      assert.equal(buildChatBody(r, client, { stream: false, tier }).priority, expected[tier], tier);
    }
  });

  it('merges extra_body under core fields and client params', () => {
    const r = route({ extraBody: { model: 'x', temperature: 0, top_k: 40, stream: true, chat_template_kwargs: { a: 1 } } });
    assert.deepEqual(buildChatBody(r, { messages, temperature: 0.7 }, plain), {
      model: 'org/model-7b', temperature: 0.7, top_k: 40, stream: false, chat_template_kwargs: { a: 1 }, messages,
    });
    assert.equal(buildChatBody(r, { messages }, plain).temperature, 0);
  });

  it('pins the aggregator sub-provider from the bracket slug', () => {
    const pinned = buildChatBody(route({ kind: 'aggregator[deep-infra]', extraBody: { provider: { order: ['other'] } } }), { messages, provider: {} }, plain);
    assert.deepEqual(pinned.provider, { order: ['deep-infra'], allow_fallbacks: false });
    assert.equal('provider' in buildChatBody(route({ kind: 'aggregator' }), { messages }, plain), false);
  });

  it('forwards tools and tool_choice only when the route supports tools', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
    const client = { messages, tools, tool_choice: 'auto' };
    const withTools = buildChatBody(route({ supportsTools: true }), client, plain);
    assert.deepEqual([withTools.tools, withTools.tool_choice], [tools, 'auto']);
    const without = buildChatBody(route({ supportedParams: ['tools', 'tool_choice'] }), client, plain);
    assert.equal('tools' in without || 'tool_choice' in without, false);
  });
});

describe('adapters: embeddings body, headers, key pool', () => {
  it('builds embeddings bodies with optional encoding_format and dimensions', () => {
    assert.deepEqual(buildEmbeddingsBody(route(), { model: 'public', input: ['a', 'b'], user: 'u' }),
      { model: 'org/model-7b', input: ['a', 'b'] });
    assert.deepEqual(buildEmbeddingsBody(route(), { input: 'a', encoding_format: 'base64', dimensions: 256 }),
      { model: 'org/model-7b', input: 'a', encoding_format: 'base64', dimensions: 256 });
  });

  it('sends bearer auth when a key is present and profile headers', () => {
    const generic = resolveAdapterKind('generic_compat');
    assert.deepEqual(upstreamHeaders('sk-1', generic), { 'content-type': 'application/json', Authorization: 'Bearer sk-1' });
    assert.deepEqual(upstreamHeaders(undefined, generic), { 'content-type': 'application/json' });
    assert.deepEqual(upstreamHeaders('', generic), { 'content-type': 'application/json' });
    const aggregator = resolveAdapterKind('aggregator[p]');
    assert.deepEqual(upstreamHeaders('k', aggregator, { siteName: 'My Site' }),
      { 'X-Title': 'My Site', 'content-type': 'application/json', Authorization: 'Bearer k' });
    assert.equal('X-Title' in upstreamHeaders('k', aggregator), false);
    assert.deepEqual(upstreamHeaders('k', aggregator, { siteName: 'My Site', siteUrl: 'https://my.example' }),
      { 'HTTP-Referer': 'https://my.example', 'X-Title': 'My Site', 'content-type': 'application/json', Authorization: 'Bearer k' });
  });

  it('rotates api keys round-robin', () => {
    const pool = new KeyPool(['a', 'b', '', 'c']);
    assert.equal(pool.size, 3);
    assert.deepEqual(Array.from({ length: 7 }, () => pool.next()), ['a', 'b', 'c', 'a', 'b', 'c', 'a']);
    assert.equal(new KeyPool([]).next(), undefined);
    const single = new KeyPool(['only']);
    assert.deepEqual([single.next(), single.next()], ['only', 'only']);
  });
});
