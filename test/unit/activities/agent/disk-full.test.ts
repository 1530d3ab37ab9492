/**
 * The message of a turn that failed for want of space (activities/agent/disk-full.ts): a driver's
 * "No space left on device" gets a plain sentence in front saying what ran out and what to do; any
 * other failure keeps its message as it is. (A full disk, read from the host, is tested with the
 * real stack in test/integration/sandbox-disk-turns.test.ts.)
 */
import assert from 'node:assert/strict';
import type Docker from 'dockerode';
import { explainNoSpace } from '../../../../activities/agent/disk-full';

/** An engine that knows no such container: no disk to read, only the message to go by. */
const noContainer = { getContainer: () => ({ inspect: () => Promise.reject(Object.assign(new Error('no such container'), { statusCode: 404 })) }) } as unknown as Docker;

describe('turn failure for want of space', () => {
  it('says the sandbox ran out of space when the driver\'s message says so', async () => {
    const message = await explainNoSpace(noContainer, 'sbx-grp', 'Cannot write /tmp/x: cat: write error: No space left on device');
    assert.match(message, /^The sandbox ran out of space \(its disk for \/workspace and the home directories, or its \/tmp\): delete files in the next turn\. /);
    assert.ok(message.endsWith('cat: write error: No space left on device'), 'the driver\'s own message follows');
  });

  it('leaves any other failure as it is', async () => {
    assert.equal(await explainNoSpace(noContainer, 'sbx-grp', 'The model answered 400'), 'The model answered 400');
  });
});
