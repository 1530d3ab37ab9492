import assert from 'node:assert/strict';
import { presentsMetricsToken } from '../../../../lib/identity/metrics-token';

describe('presentsMetricsToken: the one METRICS_TOKEN check of both /metrics routes', () => {
  const TOKEN = 'metrics-token-for-the-scraper';

  it('accepts the configured token as a Bearer credential (any case of "Bearer")', () => {
    assert.equal(presentsMetricsToken(`Bearer ${TOKEN}`, TOKEN), true);
    assert.equal(presentsMetricsToken(`bearer ${TOKEN}`, TOKEN), true);
  });

  it('refuses another token, a prefix of it, a missing header and another scheme', () => {
    assert.equal(presentsMetricsToken(`Bearer ${TOKEN}x`, TOKEN), false);
    assert.equal(presentsMetricsToken(`Bearer ${TOKEN.slice(0, 10)}`, TOKEN), false);
    assert.equal(presentsMetricsToken(undefined, TOKEN), false);
    assert.equal(presentsMetricsToken(`Basic ${TOKEN}`, TOKEN), false);
  });

  it('accepts nothing when no token is configured', () => {
    assert.equal(presentsMetricsToken(`Bearer ${TOKEN}`, undefined), false);
    assert.equal(presentsMetricsToken('Bearer ', undefined), false);
  });
});
