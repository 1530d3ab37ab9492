/**
 * The Temporal SDK's log entries in the process log: their own level, except the warnings that
 * describe this deployment's design (the host runner registers no workflows), which are INFO so a
 * clean `npm start` shows no warning.
 */
import assert from 'node:assert/strict';
import { sdkEntryLevel } from '../../../lib/temporal';

describe('Temporal SDK log levels', () => {
  it('logs the host runner\'s "No workflows registered" warning at INFO and every other entry at its own level', () => {
    assert.equal(sdkEntryLevel({ level: 'WARN', message: 'No workflows registered, not polling for workflow tasks' }), 'info');
    assert.equal(sdkEntryLevel({ level: 'WARN', message: 'Worker failed to poll' }), 'warn');
    assert.equal(sdkEntryLevel({ level: 'ERROR', message: 'No workflows registered, not polling for workflow tasks' }), 'error');
    assert.deepEqual((['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const).map((level) => sdkEntryLevel({ level, message: 'x' })), ['trace', 'debug', 'info', 'warn', 'error']);
  });
});
