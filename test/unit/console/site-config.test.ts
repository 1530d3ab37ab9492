/** What the console takes from `/site-config`, and what it refuses to put into a page. */
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { loadSiteConfig, safeUrl, SiteConfigError, siteViewOf } from '../../../console/src/site-config';
import { matchPath } from '../../../console/src/paths';

describe('console site configuration', () => {
  it('keeps https URLs and same-origin paths only', () => {
    assert.equal(safeUrl('https://example.com/logo.png'), 'https://example.com/logo.png');
    assert.equal(safeUrl('/branding/logo.svg'), '/branding/logo.svg');
    for (const bad of ['javascript:alert(1)', 'http://example.com/x.png', '//evil.example/x', 'data:image/png;base64,AA', '', 42, null]) assert.equal(safeUrl(bad), '', String(bad));
  });

  it('refuses a body that is not a site configuration', () => {
    for (const body of [null, [], 'text', { site: {} }, { features: {} }]) assert.throws(() => siteViewOf(body), SiteConfigError);
    const view = siteViewOf({ site: {}, features: { public_signup: false } });
    assert.equal(view.name, 'Gateway');
    assert.equal(view.publicSignup, false);
    assert.equal(view.storageNamespace, 'console');
  });

  it('reads the branding document: description, logo, named and header links (empty hides), storage namespace, data-policy notice', () => {
    const view = siteViewOf({
      site: { name: 'Acme AI', support_email: 'help@acme.example', docs_url: 'https://docs.acme.example' },
      features: { public_signup: true },
      branding: {
        site: { description: 'Models for Acme' }, organization: { name: 'Acme' },
        links: { docs: 'https://docs.acme.example', status: '', home: 'javascript:alert(1)' },
        header_links: [{ label: 'Blog', url: 'https://acme.example/blog' }],
        storage_namespace: 'acme', data_policy: { notice: 'We keep logs 30 days.' }, images: { logo: '/assets/acme/logo.svg' },
      },
    });
    assert.equal(view.name, 'Acme AI');
    assert.equal(view.description, 'Models for Acme');
    assert.equal(view.logoUrl, '/assets/acme/logo.svg');
    assert.deepEqual(view.links, [{ label: 'Blog', url: 'https://acme.example/blog' }, { label: 'Docs', url: 'https://docs.acme.example' }]);
    assert.equal(view.storageNamespace, 'acme');
    assert.equal(view.dataPolicyNotice, 'We keep logs 30 days.');
  });

  describe('loading', () => {
    let server: Server;
    let answer: (res: ServerResponse) => void;
    let url: string;
    before(async () => {
      server = createServer((_req, res) => answer(res));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });
    const load = (): Promise<unknown> => loadSiteConfig((input, init) => fetch(`${url}${input as string}`, init));

    it('a 503 is a configuration error naming the status and the server message', async () => {
      answer = (res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"distribution misconfigured"}}');
      await assert.rejects(load(), (err: Error) => err instanceof SiteConfigError && /503: distribution misconfigured/.test(err.message));
    });

    it('a body that is not JSON is a configuration error', async () => {
      answer = (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
      await assert.rejects(load(), /not valid JSON/);
    });

    it('no answer within 3 seconds is a configuration error saying so', async function () {
      this.timeout(10_000);
      answer = () => undefined;
      await assert.rejects(load(), /did not answer within 3 seconds/);
    });
  });
});

describe('console paths', () => {
  it('matches literal segments and decodes parameters; a bad escape does not match', () => {
    assert.deepEqual(matchPath('/chats/:jobId', '/chats/12'), { jobId: '12' });
    assert.deepEqual(matchPath('/admin/routing/:model', '/admin/routing/a%2Fb'), { model: 'a/b' });
    assert.equal(matchPath('/chats/:jobId', '/chats'), undefined);
    assert.equal(matchPath('/chats/:jobId', '/chats/1/2'), undefined);
    assert.equal(matchPath('/chats/:jobId', '/chats/%E0%A4%A'), undefined);
  });
});
