/**
 * `useResource`: loads a JSON resource, optionally refreshing it every `refreshMs`, and keeps the
 * last good data when a refresh fails (the page then says how old it is instead of going blank).
 * Refreshes pause while the tab is hidden.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../client';

/** A resource's state: its data (last good), the last error, and when the data was read. */
export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  loadedAt: number | undefined;
  reload: () => Promise<void>;
}

export function useResource<T>(path: string | undefined, options: { refreshMs?: number } = {}): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(path !== undefined);
  const [loadedAt, setLoadedAt] = useState<number | undefined>(undefined);
  const seq = useRef(0);

  const reload = useCallback(async () => {
    if (path === undefined) return;
    const mine = ++seq.current;
    setLoading(true);
    try {
      const body = await api<T>(path);
      if (mine !== seq.current) return;
      setData(body);
      setError(undefined);
      setLoadedAt(Date.now());
    } catch (err) {
      if (mine !== seq.current) return;
      setError(err instanceof ApiError ? err : new ApiError(0, (err as Error).message));
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, [path]);

  useEffect(() => {
    setData(undefined);
    setError(undefined);
    void reload();
    if (!options.refreshMs) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, options.refreshMs);
    return () => clearInterval(timer);
  }, [reload, options.refreshMs]);

  return { data, error, loading, loadedAt, reload };
}
