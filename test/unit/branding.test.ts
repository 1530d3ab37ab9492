/**
 * The branding document's safety rules: what a visitor's browser may be handed. Each case changes
 * one value of a valid document and expects the error to name that key.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { neutralBranding, readBranding, type Branding } from '../../gateway/registry/branding';

const dir = mkdtempSync(join(tmpdir(), 'branding-'));

function read(doc: unknown): Branding {
  const path = join(dir, `b-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(doc));
  return readBranding(path);
}

function valid(): Branding {
  const b = neutralBranding('Acme');
  b.images.logo = '/assets/logo.svg';
  b.links.docs = 'https://docs.acme.example/start?x=1';
  return b;
}

describe('branding document', () => {
  it('accepts the neutral document and https links and assets paths', () => {
    assert.deepEqual(read(valid()), valid());
  });

  const cases: Array<[string, (b: Branding) => void, RegExp]> = [
    ['an http link', (b) => { b.links.docs = 'http://docs.acme.example'; }, /links\.docs/],
    ['a data: image', (b) => { b.images.favicon = 'data:image/png;base64,AAAA'; }, /images\.favicon/],
    ['credentials in a URL', (b) => { b.organization.url = 'https://user:pw@acme.example'; }, /organization\.url/],
    ['a dot-dot assets path', (b) => { b.images.logo = '/assets/../secret'; }, /images\.logo/],
    ['a protocol-relative image', (b) => { b.images.logo = '//evil.example/x.png'; }, /images\.logo/],
    ['a control character in text', (b) => { b.site.description = 'a\u0007b'; }, /site\.description/],
    ['a newline in a one-line field', (b) => { b.organization.name = 'a\nb'; }, /organization\.name/],
    ['a bidi override', (b) => { b.data_policy.notice = 'ok \u202e evil'; }, /data_policy\.notice/],
    ['an overlong description', (b) => { b.site.description = 'x'.repeat(301); }, /site\.description/],
    ['an analytics id with markup', (b) => { b.analytics.measurement_id = '"><script>'; }, /analytics\.measurement_id/],
    ['another version', (b) => { (b as { version: number }).version = 2; }, /version/],
    ['an empty organization name', (b) => { b.organization.name = ''; }, /organization\.name/],
    ['an unknown sponsor size', (b) => { b.sponsors = [{ name: 'S', image: '/assets/s.png', url: '', size: 'huge' as 'large' }]; }, /sponsors\.0\.size/],
    ['a header link without URL', (b) => { b.header_links = [{ label: 'Blog', url: '' }]; }, /header_links\.0\.url/],
  ];
  for (const [what, change, key] of cases) {
    it(`rejects ${what}, naming the key`, () => {
      const b = valid();
      change(b);
      assert.throws(() => read(b), key);
    });
  }

  it('allows newlines in the quickstart example and the data-policy notice', () => {
    const b = valid();
    b.quickstart.example = 'curl \\\n  -d {}\n\tindent';
    b.data_policy.notice = 'Line one.\nLine two.';
    assert.equal(read(b).quickstart.example, b.quickstart.example);
  });
});
