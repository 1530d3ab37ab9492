/**
 * Calls `POST /admin/agent/runs/:jobId/events/:eventId/content` for tests: the status, the raw
 * text (to check nothing leaked) and the parsed body. Path parts are sent as given, so a test can
 * pass percent-encoded bytes.
 */
import { ADMIN_TOKEN } from './admin';

export interface ContentReply {
  status: number;
  text: string;
  body: Record<string, unknown> & { error?: { message: string; param: string | null } };
}

/** `token` defaults to ADMIN_TOKEN (null sends none); `body` is sent as it is, none by default. */
export async function postContent(base: string, jobId: string, eventId: string, options: { token?: string | null; body?: string } = {}): Promise<ContentReply> {
  const token = options.token === undefined ? ADMIN_TOKEN : options.token;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${base}/admin/agent/runs/${jobId}/events/${eventId}/content`, {
    method: 'POST', headers, ...(options.body === undefined ? {} : { body: options.body }),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as ContentReply['body'] };
}
