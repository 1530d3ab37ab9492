/**
 * The adapter wire layer: adapter kinds, URL joining, wire bodies, headers and key pools.
 * Pure code: nothing here performs I/O.
 */
export {
  type AdapterFamily,
  type AdapterProfile,
  type AdapterProfileInit,
  type ChatPathStyle,
  type HeaderOptions,
  type MessagesDialect,
  type ProfileHeaders,
  AdapterKindRegistry,
  BUILTIN_ADAPTER_KINDS,
  UnknownAdapterKindError,
  DIRECT_MESSAGES,
  assertEmbeddingsBuildable,
  builtinAdapterProfile,
  createAdapterKindRegistry,
  defaultAdapterKindRegistry,
  registerAdapterKind,
  resolveAdapterKind,
} from './kinds';
export { chatCompletionsUrl, chatUrlFor, embeddingsUrl, endsWithVersionSegment, responsesUrlFor, trimTrailingSlashes } from './urls';
export {
  type ChatBodyOptions,
  type PriorityTier,
  type WireRoute,
  DEFAULT_SUPPORTED_PARAMS,
  PRIORITY_BY_TIER,
  buildChatBody,
  buildEmbeddingsBody,
} from './wire-body';
export { upstreamHeaders } from './headers';
export { type MessagesUrls, messagesHeaders, messagesUrlsFor } from './message-format';
export { checkedReasoningEffort, clampTokens } from './params';
export { KeyPool } from './key-pool';
export { modelsListUrl, reachabilityUrl } from './probe-urls';
