/** The admin console's pages. */
import type { JSX } from 'preact';
import type { ConsolePage } from '../pages';
import { Page } from '../ui/parts';

function Overview(): JSX.Element {
  return <Page title="Admin"><p>Gateway and control-plane administration.</p></Page>;
}

export const adminPages: readonly ConsolePage[] = [
  { path: '/admin', title: 'Admin', access: 'admin', component: Overview },
];
