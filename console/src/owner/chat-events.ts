/**
 * A chat's event stream (`GET /v1/agent/jobs/{job_id}/events`, docs/agent-event-stream.md) as
 * page state: the events in id order, without duplicates, and the connection's state. The stream
 * resumes from the last event id after a dropped connection (`streamEvents`); when the server
 * says the chat has nothing running (`event: end`), the stream is closed rather than reopened
 * every few seconds (an expired token is not an end: the stream retries once the page has a new
 * one), and `resume()` (after a follow-up turn, or when the chat page sees work
 * again) reopens it from `?after=<last id>`, so nothing is missed or shown twice.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { streamEvents } from '../sse';
import type { AgentEvent } from './types';

/** The stream's state for the page: `ended` means the chat had nothing running when it closed. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'ended' | 'failed';

/** What `useChatEvents` gives the page. */
export interface ChatEvents {
  events: AgentEvent[];
  state: StreamState;
  detail: string | undefined;
  resume: () => void;
}

/** Follows one chat's events. */
export function useChatEvents(jobId: string): ChatEvents {
  const [events, setEvents] = useState<AgentEvent[]>([]);
  const [state, setState] = useState<StreamState>('connecting');
  const [detail, setDetail] = useState<string | undefined>(undefined);
  const [generation, setGeneration] = useState(0);
  const lastId = useRef<string | undefined>(undefined);
  const seen = useRef(new Set<string>());
  const ended = useRef(false);

  useEffect(() => {
    setEvents([]);
    lastId.current = undefined;
    seen.current = new Set();
  }, [jobId]);

  useEffect(() => {
    const controller = new AbortController();
    ended.current = false;
    const after = lastId.current ? `?after=${encodeURIComponent(lastId.current)}` : '';
    void streamEvents(`/v1/agent/jobs/${encodeURIComponent(jobId)}/events${after}`, {
      signal: controller.signal,
      // 401: the access token expired; the page's other calls renew it, and the next attempt uses the new one.
      fatal: (status) => status !== 401 && status >= 400 && status < 500,
      onState: (next, why) => {
        if (ended.current) return;
        setState(next === 'ended' ? 'failed' : next);
        setDetail(next === 'ended' ? `the server answered ${why ?? 'an error'}` : why);
      },
      onEvent: (frame) => {
        if (frame.event === 'end') {
          ended.current = true;
          setState('ended');
          controller.abort();
          return;
        }
        if (frame.event === 'error') {
          setDetail('the server reported a stream failure; reconnecting');
          return;
        }
        let event: AgentEvent;
        try {
          event = JSON.parse(frame.data) as AgentEvent;
        } catch {
          return;
        }
        if (seen.current.has(event.event_id)) return;
        seen.current.add(event.event_id);
        lastId.current = event.event_id;
        setEvents((list) => [...list, event]);
      },
    });
    return () => controller.abort();
  }, [jobId, generation]);

  const resume = useCallback(() => {
    if (ended.current) setGeneration((n) => n + 1);
  }, []);

  return { events, state, detail, resume };
}
