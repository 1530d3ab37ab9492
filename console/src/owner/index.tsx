/** The owner workspace's pages (a lazily loaded chunk): chats, starting a chat, one chat, usage, security. */
import type { ConsolePage } from '../pages';
import { ChatPage } from './chat-page';
import { ChatsPage } from './chats-page';
import { StartChatPage } from './start-chat-page';
import { SecurityPage } from './security-page';
import { UsagePage } from './usage-page';

export const ownerPages: readonly ConsolePage[] = [
  { path: '/chats', title: 'Chats', access: 'agent.use', component: ChatsPage },
  { path: '/chats/new', title: 'Start a chat', access: 'agent.use', component: StartChatPage },
  { path: '/chats/:jobId', title: 'Chat', access: 'agent.use', component: ChatPage },
  { path: '/settings/usage', title: 'Usage', access: 'agent.use', component: UsagePage },
  { path: '/settings/security', title: 'Security', access: 'agent.use', component: SecurityPage },
];
