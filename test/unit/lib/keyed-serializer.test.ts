/**
 * The keyed serializer: work on one key runs one at a time in call order, a failure does not block
 * the next call, and other keys are not held up.
 */
import assert from 'node:assert/strict';
import { keyedSerializer } from '../../../lib/keyed-serializer';

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  return { opened, open };
}

describe('keyedSerializer', () => {
  it('runs work of one key one at a time, in call order, past a failure', async () => {
    const run = keyedSerializer();
    const order: string[] = [];
    const first = gate();
    const a = run('k', async () => { order.push('a start'); await first.opened; order.push('a end'); throw new Error('a failed'); });
    const b = run('k', () => { order.push('b'); return Promise.resolve('b'); });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(order, ['a start'], 'the second call waits for the first');
    first.open();
    await assert.rejects(a, /a failed/);
    assert.equal(await b, 'b');
    assert.deepEqual(order, ['a start', 'a end', 'b']);
  });

  it('does not hold up other keys', async () => {
    const run = keyedSerializer();
    const held = gate();
    const slow = run('one', () => held.opened.then(() => 'one'));
    assert.equal(await run('two', () => Promise.resolve('two')), 'two');
    held.open();
    assert.equal(await slow, 'one');
  });
});
