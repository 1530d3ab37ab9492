/** The owner workspace's pages. */
import type { JSX } from 'preact';
import type { ConsolePage } from '../pages';
import { Page } from '../ui/parts';

function Chats(): JSX.Element {
  return <Page title="Chats"><p>Your agent chats.</p></Page>;
}

export const ownerPages: readonly ConsolePage[] = [
  { path: '/chats', title: 'Chats', access: 'agent.use', component: Chats },
];
