/** The admin console's pages (gateway admin API); each page's file says what it calls. */
import type { JSX } from 'preact';
import type { ConsolePage } from '../pages';
import { Link, Page } from '../ui/parts';
import { AuthBlocksPage, SettingsPage } from './access';
import { AlertsPage } from './alerts';
import { HealthPage, RoutingStatusPage } from './health';
import { KeysPage } from './keys';
import { adminArea } from './menu';
import { ModelPage } from './model';
import { PlaygroundPage } from './playground';
import { ProvidersPage } from './providers';
import { RequestsPage } from './requests';
import { RoutingPage } from './routing';
import { UsersPage } from './users';
import { VisibilityPage } from './visibility';

function Overview(): JSX.Element {
  return (
    <Page title="Admin">
      <p>Gateway administration: routing, providers and keys, visibility, users, the request log, the playground, alerts and health.</p>
      <ul>{adminArea.menu.filter((m) => m.path !== '/admin').map((m) => <li key={m.path}><Link to={m.path}>{m.label}</Link></li>)}</ul>
    </Page>
  );
}

export const adminPages: readonly ConsolePage[] = [
  { path: '/admin', title: 'Admin', access: 'admin', component: Overview },
  { path: '/admin/routing', title: 'Models and routes', access: 'admin', component: RoutingPage },
  { path: '/admin/routing/:model', title: 'Model', access: 'admin', component: ModelPage },
  { path: '/admin/providers', title: 'Providers', access: 'admin', component: ProvidersPage },
  { path: '/admin/keys', title: 'Provider keys', access: 'admin', component: KeysPage },
  { path: '/admin/visibility', title: 'Model visibility', access: 'admin', component: VisibilityPage },
  { path: '/admin/users', title: 'Users', access: 'admin', component: UsersPage },
  { path: '/admin/requests', title: 'Recent requests', access: 'admin', component: RequestsPage },
  { path: '/admin/playground', title: 'Playground', access: 'admin', component: PlaygroundPage },
  { path: '/admin/auth-blocks', title: 'Sign-in blocks', access: 'admin', component: AuthBlocksPage },
  { path: '/admin/settings', title: 'Runtime settings', access: 'admin', component: SettingsPage },
  { path: '/admin/alerts', title: 'Alerts', access: 'admin', component: AlertsPage },
  { path: '/admin/health', title: 'Health', access: 'admin', component: HealthPage },
  { path: '/admin/routing-status', title: 'Routing status', access: 'admin', component: RoutingStatusPage },
];
