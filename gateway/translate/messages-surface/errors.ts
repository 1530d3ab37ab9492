/**
 * Errors in the messages shape (docs/inference-surfaces.md "Messages surface"): every error the
 * messages surface answers, from auth, body parsing, routing or the upstream, is
 * `{type: "error", error: {type, message}}` with the gateway's status; mid-stream failures are an
 * `error` event. Other surfaces keep the chat-shaped body.
 */
import { AppError } from '../../../lib/errors';
import type { ErrorBody } from '../../../lib/http/error-middleware';

/** A 400 naming the field at fault. */
export function invalid(param: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid field '${param}': ${message}`, { param });
}

/** The messages-API `error.type` for an HTTP status. */
export function messagesErrorType(status: number): string {
  switch (status) {
    case 400: return 'invalid_request_error';
    case 401: return 'authentication_error';
    case 402: return 'billing_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 503:
    case 529: return 'overloaded_error';
    case 504: return 'timeout_error';
    default: return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

export interface MessagesErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/** The messages-shaped body for an error the gateway rendered chat-shaped. */
export function messagesErrorBody(status: number, body: ErrorBody): MessagesErrorBody {
  return { type: 'error', error: { type: messagesErrorType(status), message: body.error.message } };
}

/** The `error` SSE event closing a stream that failed after its first byte. */
export function messagesErrorEvent(message: string): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`;
}
