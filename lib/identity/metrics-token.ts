/**
 * The `METRICS_TOKEN` check of both services' `GET /metrics` (docs/metrics.md): a Prometheus
 * scrape presents `Authorization: Bearer <METRICS_TOKEN>`. One function, so the gateway and the
 * control-plane API compare it the same way (constant time, digests of both sides).
 */
import { bearerToken } from '../http/json-body';
import { tokenEquals } from './constant-time';

/**
 * Whether the `Authorization` header presents the configured metrics token; false when no token
 * is configured (the scrape then needs an administrator credential) or the header carries another.
 */
export function presentsMetricsToken(authorization: string | undefined, metricsToken: string | undefined): boolean {
  if (metricsToken === undefined) return false;
  return tokenEquals(bearerToken(authorization), metricsToken);
}
