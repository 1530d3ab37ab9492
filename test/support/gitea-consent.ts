/**
 * A Gitea user's consent to an OAuth2 application, driven over HTTP the way a browser does it
 * (Gitea has no API that grants an application): sign in through the web form
 * (`POST /user/login`), open the authorize URL, and submit its grant form
 * (`POST /login/oauth/grant`, `granted=true`; a user who granted it before is redirected at once).
 * Returns the `code` and `state` Gitea redirects with.
 */
import assert from 'node:assert/strict';
import type { GiteaUser } from './gitea';

class CookieJar {
  private readonly cookies = new Map<string, string>();

  keep(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      if (eq > 0) this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

function hiddenInputs(html: string): Record<string, string> {
  const form = /<form[^>]*action="\/login\/oauth\/grant"[\s\S]*?<\/form>/.exec(html)?.[0];
  assert.ok(form, 'Gitea shows its grant form');
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!.replace(/&amp;/g, '&').replace(/&#34;/g, '"').replace(/&#39;/g, "'");
  return fields;
}

/** Signs in to `giteaUrl` as `user`, opens `authorizeUrl` and grants it. */
export async function consentAtGitea(giteaUrl: string, authorizeUrl: string, user: GiteaUser): Promise<{ code: string; state: string }> {
  const jar = new CookieJar();
  const form = (body: Record<string, string>) => ({
    method: 'POST', redirect: 'manual' as const, body: new URLSearchParams(body).toString(),
    headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded', origin: giteaUrl },
  });
  jar.keep(await fetch(`${giteaUrl}/user/login`, { redirect: 'manual' }));
  const signedIn = jar.keep(await fetch(`${giteaUrl}/user/login`, form({ user_name: user.username, password: user.password })));
  assert.equal(signedIn.status, 303, `Gitea signs ${user.username} in`);
  const page = jar.keep(await fetch(authorizeUrl, { redirect: 'manual', headers: { cookie: jar.header() } }));
  // A user who granted the application before is redirected at once; else Gitea shows the grant form.
  const granted = page.status === 200 ? jar.keep(await fetch(`${giteaUrl}/login/oauth/grant`, form({ ...hiddenInputs(await page.text()), granted: 'true' }))) : page;
  assert.ok([302, 303].includes(granted.status), `Gitea redirects with a code (got ${granted.status})`);
  const back = new URL(granted.headers.get('location') ?? '');
  assert.equal(back.searchParams.get('error'), null, `Gitea granted: ${back.searchParams.get('error_description') ?? ''}`);
  return { code: back.searchParams.get('code') ?? '', state: back.searchParams.get('state') ?? '' };
}
