/**
 * The console's copies of the workflow id formats (console/src/ui/temporal.ts) against the
 * server's builders in workflows/definitions/: a changed format on either side fails here, so the
 * console's Temporal UI links cannot drift from the workflows they point to.
 */
import assert from 'node:assert/strict';
import * as mirror from '../../../console/src/ui/temporal';
import { chatWorkflowId } from '../../../workflows/definitions/chat';
import { hostWorkflowId } from '../../../workflows/definitions/host';
import { sandboxGroupWorkflowId } from '../../../workflows/definitions/sandbox-group';

describe('console: Temporal workflow ids mirror workflows/definitions', () => {
  const samples = ['job_01HZX5K3', 'grp_abc-123', 'th-run-7.host_1', 'with:colon/and space'];

  it('builds the same chat, sandbox group and host workflow ids as the server', () => {
    for (const id of samples) {
      assert.equal(mirror.chatWorkflowId(id), chatWorkflowId(id));
      assert.equal(mirror.sandboxGroupWorkflowId(id), sandboxGroupWorkflowId(id));
      assert.equal(mirror.hostWorkflowId(id), hostWorkflowId(id));
    }
  });

  it('links to <ui>/namespaces/<ns>/workflows/<id>, each segment encoded, without a doubled slash', () => {
    const info = { temporal_ui_url: 'http://127.0.0.1:8233/', temporal_namespace: 'default' };
    assert.equal(mirror.temporalWorkflowUrl(info, sandboxGroupWorkflowId('grp_1')), 'http://127.0.0.1:8233/namespaces/default/workflows/sandbox%3Agrp_1');
    assert.equal(mirror.temporalWorkflowUrl({ temporal_ui_url: 'https://t.example/ui', temporal_namespace: 'a b' }, 'host:h/1'), 'https://t.example/ui/namespaces/a%20b/workflows/host%3Ah%2F1');
  });
});
