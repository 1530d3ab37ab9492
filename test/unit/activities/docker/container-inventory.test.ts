/**
 * A host's resource reading of one container from a `docker stats` sample, as `docker stats` computes it.
 */
import assert from 'node:assert/strict';
import { readingOf } from '../../../../activities/docker/container-inventory';

describe('container resource reading (docker stats)', () => {
  it('computes CPU percent of one CPU and memory without the inactive page cache', () => {
    const reading = readingOf({
      cpu_stats: { cpu_usage: { total_usage: 3_000_000_000 }, system_cpu_usage: 20_000_000_000, online_cpus: 4 },
      precpu_stats: { cpu_usage: { total_usage: 2_000_000_000 }, system_cpu_usage: 16_000_000_000 },
      memory_stats: { usage: 100 * 1024 * 1024, stats: { total_inactive_file: 30 * 1024 * 1024 } },
    });
    assert.deepEqual(reading, { cpu_percent: 100, memory_bytes: 70 * 1024 * 1024 });
    assert.deepEqual(readingOf({ memory_stats: { usage: 10, stats: { inactive_file: 4 } } }), { cpu_percent: null, memory_bytes: 6 });
    assert.deepEqual(readingOf({}), { cpu_percent: null, memory_bytes: null });
  });
});
