/**
 * The console shell: reads the site configuration first (a configuration error with a retry
 * button when it fails), then the session (sign-in when there is none), then the page of the
 * current URL from its area, with a menu of what the account may use. While the server is
 * unreachable a banner says the console is read-only. `/stats` (public stats) needs no sign-in.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { canUseAgent, isAdmin, isAgentAdmin, logOut, reloadAccount, setStorageNamespace, useSession, type Account } from './client';
import { adminArea } from './admin/menu';
import { LoginForm, SessionExpiredDialog } from './login';
import { operatorArea } from './operator/menu';
import { ownerArea } from './owner/menu';
import type { ConsoleArea, ConsolePage, PageAccess } from './pages';
import { matchPath, navigate, useLocation } from './router';
import { loadSiteConfig, SiteConfigError, type SiteView } from './site-config';
import { StatsPage } from './stats-page';
import { Link, Page, time } from './ui/parts';

/** The areas, most specific prefix first (`/admin/agent` before `/admin`). */
const AREAS: readonly ConsoleArea[] = [ownerArea, operatorArea, adminArea];

/** Whether `account` may open pages of `access`. */
export function allowed(account: Account | undefined, access: PageAccess): boolean {
  if (access === 'admin') return isAdmin(account);
  if (access === 'agent.admin') return isAgentAdmin(account);
  return canUseAgent(account);
}

function ConfigError(props: { message: string; retry: () => void; busy: boolean }): JSX.Element {
  return (
    <main class="config-error">
      <div role="alert">
        <h1>Configuration error</h1>
        <p>{props.message}</p>
        <p class="muted">The console needs the site configuration (<code>GET /site-config</code>) to start.</p>
      </div>
      <button type="button" onClick={props.retry} disabled={props.busy}>{props.busy ? 'Retrying…' : 'Retry'}</button>
    </main>
  );
}

function useSite(): { site: SiteView | undefined; error: string | undefined; busy: boolean; retry: () => void } {
  const [state, setState] = useState<{ site?: SiteView; error?: string; busy: boolean }>({ busy: true });
  const load = (): void => {
    setState((s) => ({ ...s, busy: true }));
    loadSiteConfig().then(
      (site) => {
        setStorageNamespace(site.storageNamespace);
        setState({ site, busy: false });
      },
      (err: unknown) => setState({ error: err instanceof SiteConfigError ? err.message : String(err), busy: false }),
    );
  };
  useEffect(load, []);
  return { site: state.site, error: state.error, busy: state.busy, retry: load };
}

function usePages(area: ConsoleArea | undefined): readonly ConsolePage[] | undefined {
  const [loaded, setLoaded] = useState<{ area: ConsoleArea; pages: readonly ConsolePage[] } | undefined>(undefined);
  useEffect(() => {
    if (!area || loaded?.area === area) return;
    void area.load().then((pages) => setLoaded({ area, pages }));
  }, [area, loaded]);
  return area && loaded?.area === area ? loaded.pages : undefined;
}

const AREA_ROOTS = new Set(['/admin', '/admin/agent']);

/** The one public page: usage statistics, for anyone, signed in or not (docs/public-stats.md). */
const PUBLIC_STATS_PATH = '/stats';

function Menu(props: { account: Account; path: string }): JSX.Element {
  return (
    <nav aria-label="Console">
      {AREAS.map((area) => {
        const items = area.menu.filter((m) => allowed(props.account, m.access));
        if (!items.length) return null;
        return (
          <div class="menu-group" key={area.heading}>
            <h2>{area.heading}</h2>
            <ul>
              {items.map((m) => (
                <li key={m.path}><Link to={m.path} class={props.path === m.path || (!AREA_ROOTS.has(m.path) && props.path.startsWith(`${m.path}/`)) ? 'current' : undefined}>{m.label}</Link></li>
              ))}
            </ul>
          </div>
        );
      })}
    </nav>
  );
}

function Home(props: { account: Account }): JSX.Element {
  useEffect(() => {
    if (canUseAgent(props.account)) navigate('/chats', { replace: true });
    else if (isAdmin(props.account)) navigate('/admin', { replace: true });
  }, [props.account]);
  return (
    <Page title="Console">
      <p>This account ({props.account.email}) has no console access: the workspace needs the <code>agent.use</code> permission, the admin console the admin role.</p>
    </Page>
  );
}

function Routed(props: { account: Account; path: string; query: URLSearchParams }): JSX.Element {
  const area = AREAS.find((a) => a.prefixes.some((p) => props.path === p || props.path.startsWith(`${p}/`)));
  const pages = usePages(area);
  if (props.path === '/' || props.path === '') return <Home account={props.account} />;
  if (!area) return <Page title="Not found"><p>No console page at this address.</p></Page>;
  if (!pages) return <p class="muted" role="status">Loading…</p>;
  for (const page of pages) {
    const params = matchPath(page.path, props.path);
    if (!params) continue;
    if (!allowed(props.account, page.access)) return <Page title="Not allowed"><p>This page needs {page.access === 'admin' ? 'the admin role' : `the ${page.access} permission`}.</p></Page>;
    const Component = page.component;
    return <Component params={params} query={props.query} />;
  }
  return <Page title="Not found"><p>No console page at this address.</p></Page>;
}

/** The whole console. */
export function App(): JSX.Element {
  const { site, error, busy, retry } = useSite();
  const { account, expired, outages } = useSession();
  const location = useLocation();
  useEffect(() => {
    if (account) void reloadAccount();
  }, [account?.id]);
  if (!site) return error ? <ConfigError message={error} retry={retry} busy={busy} /> : <p class="muted" role="status">Loading…</p>;
  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <span class="brand">{site.logoUrl ? <img src={site.logoUrl} alt="" height={24} /> : null}{site.name}</span>
        {account ? (
          <span class="who">
            {account.email} <span class="muted">({account.role})</span>{' '}
            <button type="button" class="link" onClick={() => void logOut().then(() => navigate('/', { replace: true }))}>Sign out</button>
          </span>
        ) : null}
      </header>
      {outages.map((o) => (
        <p key={o.part} class="banner warn" role="status">
          The {o.part} is not answering since {time(o.since)} ({o.reason}): the console is read-only and shows the last data it read.
        </p>
      ))}
      {location.path === PUBLIC_STATS_PATH ? (
        <main id="main" tabIndex={-1}><StatsPage /></main>
      ) : account ? (
        <div class="body">
          <Menu account={account} path={location.path} />
          <main id="main" tabIndex={-1}><Routed account={account} path={location.path} query={location.query} /></main>
        </div>
      ) : (
        <main id="main" class="signin"><LoginForm heading={`Sign in to ${site.name}`} note={site.description || undefined} /></main>
      )}
      {account && expired ? <SessionExpiredDialog /> : null}
      <footer>
        {site.links.map((l) => <a key={l.label} href={l.url} rel="noopener noreferrer">{l.label}</a>)}
        {site.dataPolicyNotice ? <small>{site.dataPolicyNotice}</small> : null}
      </footer>
    </div>
  );
}
