/**
 * The model-facing names of MCP tools and the capability snapshot's bounds (docs/mcp.md "Tool names",
 * "Discovery"): names fit the 64-character function-name limit and stay unique; untrusted tool lists
 * are cut, cleaned and filtered.
 */
import assert from 'node:assert/strict';
import { MAX_FUNCTION_NAME, qualifiedToolName } from '../../../../agent/tools/tool-names';
import { MAX_TOOLS, snapshotOf } from '../../../../agent/tools/capabilities';

describe('MCP tool names and capability snapshots', () => {
  it('names a tool <connection>__<tool> when that fits the function-name rule', () => {
    assert.equal(qualifiedToolName('docs', 'search'), 'docs__search');
  });

  it('replaces characters outside the rule, cuts long names and keeps them unique and stable', () => {
    const dotted = qualifiedToolName('docs', 'files.read');
    assert.match(dotted, /^docs__files_read_[0-9a-f]{6}$/);
    const long = qualifiedToolName('a-very-long-connection-name-abcd', 'an_extremely_long_tool_name_that_goes_on_and_on');
    assert.equal(long.length, MAX_FUNCTION_NAME);
    assert.match(long, /^[A-Za-z0-9_-]+$/);
    assert.equal(qualifiedToolName('a-very-long-connection-name-abcd', 'an_extremely_long_tool_name_that_goes_on_and_on'), long, 'stable');
    assert.notEqual(qualifiedToolName('a-very-long-connection-name-abcd', 'an_extremely_long_tool_name_that_goes_on_and_on_2'), long);
    assert.notEqual(qualifiedToolName('docs', 'search', new Set(['docs__search'])), 'docs__search', 'a name taken in the chat is made unique');
  });

  it('keeps at most the tool limit, drops unusable names, cleans text and replaces oversized schemas', () => {
    const tools = [
      { name: 'ok', description: 'fine\u0000', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } },
      { name: 'bad name', description: 'x' },
      { name: 'ok', description: 'duplicate' },
      { name: 'big', description: 'd'.repeat(5000), inputSchema: { type: 'object', description: 'x'.repeat(20_000) } },
      ...Array.from({ length: MAX_TOOLS + 5 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object' } })),
    ];
    const snapshot = snapshotOf(tools, { name: 'srv\ud800', version: '1' });
    assert.equal(snapshot.tools.length, MAX_TOOLS);
    assert.equal(snapshot.dropped, tools.length - MAX_TOOLS);
    assert.equal(snapshot.tools[0]!.description, 'fine\uFFFD');
    assert.equal(snapshot.tools[1]!.description.length, 2000);
    assert.deepEqual(snapshot.tools[1]!.input_schema, { type: 'object', properties: {} });
    assert.equal(snapshot.server?.name, 'srv\uFFFD');
  });
});
