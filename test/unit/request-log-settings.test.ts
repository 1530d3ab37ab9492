/**
 * The request log's settings: documented defaults, and the queue must hold at least one batch.
 */
import assert from 'node:assert/strict';
import { loadSettings } from '../../lib/settings';

describe('request log settings', () => {
  it('applies the documented defaults', () => {
    const s = loadSettings({});
    assert.deepEqual(
      [s.REQUEST_LOG_ENABLED, s.REQUEST_LOG_BATCH_SIZE, s.REQUEST_LOG_FLUSH_INTERVAL_MS, s.REQUEST_LOG_MAX_QUEUE, s.REQUEST_LOG_WRITE_TIMEOUT_MS, s.REQUEST_LOG_SPOOL_DIR, s.REQUEST_LOG_SPOOL_MAX_MIB],
      [true, 500, 1000, 10_000, 5000, '.data/request-log-spool', 512],
    );
  });

  it('refuses a queue smaller than a batch, naming the variable', () => {
    assert.throws(() => loadSettings({ REQUEST_LOG_BATCH_SIZE: '100', REQUEST_LOG_MAX_QUEUE: '50' }), /REQUEST_LOG_MAX_QUEUE: must be at least REQUEST_LOG_BATCH_SIZE/);
    assert.equal(loadSettings({ REQUEST_LOG_BATCH_SIZE: '50', REQUEST_LOG_MAX_QUEUE: '50' }).REQUEST_LOG_MAX_QUEUE, 50);
    assert.throws(() => loadSettings({ REQUEST_LOG_ENABLED: 'maybe' }), /REQUEST_LOG_ENABLED/);
  });
});
