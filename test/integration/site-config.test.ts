/**
 * `GET /site-config` against real gateways started from real manifests and branding documents in
 * temporary directories: neutral defaults without a manifest, an active manifest's site, features
 * and branding (YAML and JSON), `SITE_*` overriding the manifest, an invalid branding document
 * failing the active manifest (503, CRITICAL naming file and key) but only logging in dark mode,
 * and 503 for a misconfigured mode.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SiteConfig } from '../../gateway/surfaces/site-config';
import { startFakeUpstream } from '../support/fake-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

/** A complete, valid branding document (YAML). */
const BRANDING = `version: 1
site: { description: "Models for Acme engineers", host: ai.acme.example }
organization: { name: Acme, url: "https://acme.example" }
links: { home: "https://acme.example", docs: "https://docs.acme.example", support: "", status: "", terms: "", privacy: "", source: "" }
header_links:
  - { label: Blog, url: "https://acme.example/blog" }
quickstart:
  model: acme-chat
  example: |
    curl https://ai.acme.example/v1/chat/completions \\
      -H "Authorization: Bearer $KEY"
analytics: { measurement_id: G-ACME123, project_key: "" }
widget_key: ""
storage_namespace: acme
data_policy: { notice: "Prompts are kept 30 days.", url: "" }
images: { logo: /assets/acme/logo.svg, logo_dark: "https://cdn.acme.example/logo-dark.svg", favicon: "", social_card: "" }
sponsors:
  - { name: Lab, image: /assets/lab.png, url: "https://lab.example", size: large }
`;

/** Writes a manifest (and optionally a branding file) in a fresh directory; returns the manifest path. */
function distribution(options: { branding?: string; brandingFile?: string; manifestExtra?: string } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'site-config-'));
  const brandingFile = options.brandingFile ?? 'branding.yaml';
  if (options.branding !== undefined) writeFileSync(join(dir, brandingFile), options.branding);
  writeFileSync(join(dir, 'manifest.yaml'), `schema_version: 1
distribution: { id: acme, display_name: Acme AI }
site:
  public_base_url: "https://ai.acme.example"
  support_email: help@acme.example
  terms_document: docs/terms.md
${options.branding !== undefined ? `  branding: ${brandingFile}\n` : ''}features: { public_stats: true, routers: [fixed] }
${options.manifestExtra ?? ''}`);
  return join(dir, 'manifest.yaml');
}

async function withGateway(env: Record<string, string>, fn: (gw: TestGateway) => Promise<void>, modelsYaml?: string): Promise<void> {
  const gw = await startTestGateway({ env, ...(modelsYaml === undefined ? {} : { modelsYaml }) });
  try {
    await fn(gw);
  } finally {
    await gw.close();
  }
}

async function getConfig(gw: TestGateway): Promise<{ status: number; body: SiteConfig & { error?: { message: string } }; headers: Headers }> {
  const res = await fetch(`${gw.url}/site-config`);
  return { status: res.status, body: (await res.json()) as SiteConfig & { error?: { message: string } }, headers: res.headers };
}

const active = (path: string): Record<string, string> => ({ DISTRIBUTION_CONFIG_PATH: path, DISTRIBUTION_CONFIG_MODE: 'active' });

describe('GET /site-config', function () {
  this.timeout(20_000);

  it('without a manifest: 200 with neutral defaults, declared public, revalidated by ETag', async () => {
    await withGateway({ GATEWAY_PORT: '8123' }, async (gw) => {
      const route = gw.routes.find((r) => r.path === '/site-config');
      assert.deepEqual({ methods: route?.methods, path: route?.path, access: route?.access }, { methods: ['GET'], path: '/site-config', access: 'public' });
      const { status, body, headers } = await getConfig(gw);
      assert.equal(status, 200);
      assert.equal(headers.get('cache-control'), 'no-cache');
      assert.deepEqual(body.site, { name: 'Inference Gateway', public_base_url: 'http://localhost:8123', docs_url: '', support_email: '', terms_document: '', privacy_document: '' });
      assert.deepEqual(body.features, { public_signup: true, public_stats: false, rag: false, routers: [] });
      assert.equal(body.branding.version, 1);
      assert.equal(body.branding.organization.name, 'Inference Gateway');
      assert.deepEqual(body.branding.sponsors, []);
      // node:http, not fetch: fetch adds `Cache-Control: no-cache` to a conditional request, which defeats revalidation.
      const again = await conditionalGet(`${gw.url}/site-config`, headers.get('etag')!);
      assert.equal(again, 304, 'unchanged configuration revalidates');
      assert.equal(await conditionalGet(`${gw.url}/site-config`, '"other"'), 200);
    });
  });

  it('serves an active manifest\'s site, features and YAML branding', async () => {
    await withGateway(active(distribution({ branding: BRANDING })), async (gw) => {
      const { status, body } = await getConfig(gw);
      assert.equal(status, 200);
      assert.deepEqual(body.site, {
        name: 'Acme AI', public_base_url: 'https://ai.acme.example', docs_url: 'https://docs.acme.example',
        support_email: 'help@acme.example', terms_document: 'docs/terms.md', privacy_document: '',
      });
      assert.deepEqual(body.features, { public_signup: true, public_stats: true, rag: false, routers: ['fixed'] });
      assert.equal(body.branding.storage_namespace, 'acme');
      assert.equal(body.branding.images.logo, '/assets/acme/logo.svg');
      assert.deepEqual(body.branding.sponsors, [{ name: 'Lab', image: '/assets/lab.png', url: 'https://lab.example', size: 'large' }]);
      assert.match(body.branding.quickstart.example, /\n {2}-H "Authorization/);
    });
  });

  it('reads a JSON branding document, and reports sign-up closed by the manifest', async () => {
    const json = JSON.stringify({ ...(await brandingAsObject()), storage_namespace: 'acme-json' });
    const path = distribution({ branding: json, brandingFile: 'branding.json' });
    writeFileSync(path, `schema_version: 1\nsite: { branding: branding.json }\nfeatures: { public_signup: false }\n`);
    await withGateway(active(path), async (gw) => {
      const { status, body } = await getConfig(gw);
      assert.equal(status, 200);
      assert.equal(body.branding.storage_namespace, 'acme-json');
      assert.equal(body.features.public_signup, false);
    });
  });

  it('SITE_* variables override the manifest', async () => {
    const env = {
      ...active(distribution({ branding: BRANDING })),
      SITE_NAME: 'Env Name', SITE_PUBLIC_BASE_URL: 'https://env.example', SITE_DOCS_URL: 'https://env.example/docs', SITE_SUPPORT_EMAIL: 'env@example.com',
    };
    await withGateway(env, async (gw) => {
      const { body } = await getConfig(gw);
      assert.deepEqual([body.site.name, body.site.public_base_url, body.site.docs_url, body.site.support_email], ['Env Name', 'https://env.example', 'https://env.example/docs', 'env@example.com']);
      assert.equal(body.branding.organization.name, 'Acme', 'the branding document itself is served as written');
    });
  });

  const invalid: Array<[string, string, RegExp]> = [
    ['an unknown key', BRANDING.replace('widget_key: ""', 'widget_key: ""\ntheme: dark'), /\(document\): .*theme/],
    ['a javascript: link', BRANDING.replace('support: ""', 'support: "javascript:alert(1)"'), /links\.support: must be an https:\/\/ URL/],
    ['an image outside the assets path', BRANDING.replace('/assets/lab.png', '/etc/passwd'), /sponsors\.0\.image: must be an https:\/\/ URL or a path under \/assets\//],
    ['a missing required field', BRANDING.replace('storage_namespace: acme\n', ''), /storage_namespace: is required/],
  ];
  for (const [what, doc, message] of invalid) {
    it(`with ${what} in the branding document, an active manifest fails: CRITICAL naming file and key, 503, no models`, async () => {
      const path = distribution({ branding: doc });
      await withGateway(active(path), async (gw) => {
        const critical = gw.logs.lines.find((l) => l.event === 'distribution_manifest_failed');
        assert.ok(critical, 'the failure is logged');
        assert.match(String(critical.msg), message);
        assert.ok(String(critical.msg).includes(join(path, '..', 'branding.yaml')), 'names the branding file');
        const { status, body } = await getConfig(gw);
        assert.equal(status, 503);
        assert.match(body.error!.message, /active distribution manifest failed to load/);
        const models = (await (await fetch(`${gw.url}/v1/models`)).json()) as { data: unknown[] };
        assert.deepEqual(models.data, []);
      });
    });
  }

  it('in dark mode an invalid branding document is only a warning naming the key; neutral defaults are served', async () => {
    const path = distribution({ branding: BRANDING.replace('support: ""', 'support: "javascript:alert(1)"') });
    await withGateway({ DISTRIBUTION_CONFIG_PATH: path, DISTRIBUTION_CONFIG_MODE: 'dark' }, async (gw) => {
      const warning = gw.logs.lines.find((l) => l.event === 'branding_invalid');
      assert.match(String(warning?.msg), /links\.support/);
      const { status, body } = await getConfig(gw);
      assert.equal(status, 200);
      assert.equal(body.site.name, 'Inference Gateway', 'a dark manifest is not applied');
    });
  });

  it('with a misconfigured distribution mode: 503 with the reason', async () => {
    await withGateway({ DISTRIBUTION_CONFIG_PATH: distribution({ branding: BRANDING }), DISTRIBUTION_CONFIG_MODE: 'Active' }, async (gw) => {
      const { status, body } = await getConfig(gw);
      assert.equal(status, 503);
      assert.match(body.error!.message, /DISTRIBUTION_CONFIG_MODE must be exactly 'dark' or 'active'/);
    });
  });
});

describe('the aggregator\'s site headers come from the site identity', function () {
  this.timeout(20_000);
  const cases: Array<[string, () => Record<string, string>, string, string]> = [
    ['neutral defaults without a manifest', () => ({ GATEWAY_PORT: '8124' }), 'http://localhost:8124', 'Inference Gateway'],
    ['the active manifest', () => active(distribution({ branding: BRANDING })), 'https://ai.acme.example', 'Acme AI'],
    ['SITE_* over the manifest', () => ({ ...active(distribution({ branding: BRANDING })), SITE_NAME: 'Env Name', SITE_PUBLIC_BASE_URL: 'https://env.example' }), 'https://env.example', 'Env Name'],
    ['not a dark manifest', () => ({ DISTRIBUTION_CONFIG_PATH: distribution({ branding: BRANDING }), DISTRIBUTION_CONFIG_MODE: 'dark', GATEWAY_PORT: '8125' }), 'http://localhost:8125', 'Inference Gateway'],
  ];
  for (const [what, env, referer, title] of cases) {
    it(`sends HTTP-Referer and X-Title from ${what}`, async () => {
      const upstream = await startFakeUpstream();
      try {
        const models = `models:\n  - { id: agg-chat, name: Agg, provider: aggregator, base_url: "${upstream.url}", api_key: k }\n  - { id: plain-chat, name: Plain, provider: generic_compat, base_url: "${upstream.url}", api_key: k }\n`;
        await withGateway(env(), async (gw) => {
          for (const model of ['agg-chat', 'plain-chat']) {
            const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
            assert.equal(res.status, 200, await res.text());
          }
          const [agg, plain] = upstream.chatRequests();
          assert.equal(agg!.headers['http-referer'], referer);
          assert.equal(agg!.headers['x-title'], title);
          assert.equal(plain!.headers['x-title'], undefined, 'only the aggregator profile sends site headers');
        }, models);
      } finally {
        await upstream.close();
      }
    });
  }
});

/** The status of a GET with `If-None-Match: etag`. */
function conditionalGet(url: string, etag: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'if-none-match': etag } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

/** The valid YAML branding document as an object (for the JSON variant). */
async function brandingAsObject(): Promise<Record<string, unknown>> {
  const { parse } = await import('yaml');
  return parse(BRANDING) as Record<string, unknown>;
}
