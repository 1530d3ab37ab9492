/**
 * Where a health or verification probe looks for an upstream's model listing (`GET …/models`):
 * beside the chat-completions path for compatible kinds, beside the messages path for the
 * message-format kinds that have one (`<base>/v1/models`). The cloud variant (`raw_predict`)
 * lists no models: {@link modelsListUrl} answers `undefined` and {@link reachabilityUrl} its
 * model's resource instead.
 */
import type { AdapterProfile } from './kinds';
import { messagesUrlsFor } from './message-format';
import { chatUrlFor } from './urls';

const CHAT_PATH = '/chat/completions';
const MESSAGES_PATH = '/messages';

/** The model listing of a route's upstream, or `undefined` when its kind has none. */
export function modelsListUrl(adapter: AdapterProfile, baseUrl: string): string | undefined {
  if (adapter.messages !== undefined) {
    if (adapter.messages.path === 'raw_predict') return undefined;
    const create = messagesUrlsFor(adapter.messages, baseUrl, '').create;
    return `${create.slice(0, -MESSAGES_PATH.length)}/models`;
  }
  const chat = chatUrlFor(adapter, baseUrl);
  return chat.endsWith(CHAT_PATH) ? `${chat.slice(0, -CHAT_PATH.length)}/models` : `${new URL(chat).origin}/v1/models`;
}

/** A URL whose answer shows the upstream reachable: its model listing, else (cloud variant) its model's resource. */
export function reachabilityUrl(adapter: AdapterProfile, baseUrl: string, providerModelId: string): string {
  const listing = modelsListUrl(adapter, baseUrl);
  if (listing !== undefined) return listing;
  return messagesUrlsFor(adapter.messages!, baseUrl, providerModelId).create.replace(/:rawPredict$/, '');
}
