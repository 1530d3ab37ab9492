/**
 * `/v1/responses` requests → chat bodies and chat completions → `response` objects
 * (docs/inference-surfaces.md "`POST /v1/responses`"), on the shapes Codex CLI 0.171 sends:
 * function, namespace, freeform and hosted tools; developer messages; reasoning, custom tool call
 * and tool output items; the fields it sets that chat has no use for.
 */
import assert from 'node:assert/strict';
import { softReasoningEffort, responsesToChat } from '../../../gateway/translate/responses-surface/request';
import { chatToResponse, responseContext } from '../../../gateway/translate/responses-surface/response';
import { MAX_FUNCTION_NAME } from '../../../gateway/translate/responses-surface/tools';

type Json = Record<string, unknown>;

const LONG_NAMESPACE = 'a_namespace_whose_name_is_long_enough_to_overflow';

/** A Codex request in miniature (recorded field set of `codex exec` 0.171). */
const CODEX = {
  model: 'codex-model', stream: true, tool_choice: 'auto', parallel_tool_calls: true, reasoning: { effort: 'medium', summary: 'auto' },
  store: false, include: ['reasoning.encrypted_content'], prompt_cache_key: 'thread-1', text: { verbosity: 'low' },
  client_metadata: { turn_id: 't1', 'x-codex-turn-metadata': '{}' },
  tools: [
    { type: 'function', name: 'exec_command', description: 'Runs a command', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } },
    { type: 'namespace', name: 'multi_agent_v1', description: 'agents', tools: [{ type: 'function', name: 'close_agent', parameters: { type: 'object', properties: {} } }] },
    { type: 'namespace', name: LONG_NAMESPACE, tools: [{ type: 'function', name: 'with_a_long_function_name_too', parameters: { type: 'object', properties: {} } }] },
    { type: 'custom', name: 'apply_patch', description: 'Edit files', format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch' } },
    { type: 'tool_search', execution: 'client', parameters: { type: 'object', properties: {} } },
    { type: 'web_search', external_web_access: true },
    { type: 'local_shell' }, { type: 'image_generation' }, { type: 'file_search', vector_store_ids: [] }, { type: 'computer_use_preview' }, { type: 'mcp', server_label: 's' }, { type: 'something_new' },
  ],
  input: [
    { type: 'message', id: 'msg_1', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
    { type: 'message', id: 'msg_2', role: 'developer', content: [{ type: 'input_text', text: '<skills/>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'write a file' }] },
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: null },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'On it.' }] },
    { type: 'function_call', call_id: 'c1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
    { type: 'function_call', call_id: 'c2', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{}' },
    { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
    { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'closed' }, { type: 'input_image', image_url: 'data:image/png;base64,AA' }] },
    { type: 'custom_tool_call', call_id: 'c3', name: 'apply_patch', input: '*** Begin Patch' },
    { type: 'custom_tool_call_output', call_id: 'c3', output: 'Done' },
  ],
};

describe('responses surface: request translation', () => {
  const { chat, names, reasoningEffort } = responsesToChat(CODEX);
  const toolNames = (chat.tools as Json[]).map((t) => (t.function as Json).name as string);

  it('keeps function tools, flattens namespaces, turns freeform tools into one-string functions, leaves hosted tools out', () => {
    assert.equal(toolNames.length, 4);
    assert.deepEqual(toolNames.slice(0, 2), ['exec_command', 'multi_agent_v1__close_agent']);
    const long = toolNames[2]!;
    assert.ok(long.length <= MAX_FUNCTION_NAME, long);
    assert.match(long, /^a_namespace_whose_name_is_long_enough_to_overflow__with_[0-9a-f]{8}$/, 'its first 55 characters, _ and 8 hex digits');
    assert.deepEqual(names.offered(long), { type: 'function', name: 'with_a_long_function_name_too', namespace: LONG_NAMESPACE });
    assert.deepEqual(names.offered('multi_agent_v1__close_agent'), { type: 'function', name: 'close_agent', namespace: 'multi_agent_v1' });
    const patch = (chat.tools as Json[])[3]!.function as Json;
    assert.equal(patch.name, 'apply_patch');
    assert.deepEqual((patch.parameters as Json).required, ['input']);
    assert.match(((patch.parameters as { properties: { input: { description: string } } }).properties.input.description), /lark grammar:\nstart: begin_patch/);
    assert.deepEqual(names.offered('apply_patch'), { type: 'custom', name: 'apply_patch' });
  });

  it('turns developer messages into one system message, drops reasoning items, groups calls under the assistant message', () => {
    const messages = chat.messages as Json[];
    assert.deepEqual(messages[0], { role: 'system', content: 'You are Codex.\n\n<skills/>' });
    assert.deepEqual(messages[1], { role: 'user', content: [{ type: 'text', text: 'write a file' }] });
    assert.deepEqual(messages[2], {
      role: 'assistant', content: 'On it.', tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"ls"}' } },
        { id: 'c2', type: 'function', function: { name: 'multi_agent_v1__close_agent', arguments: '{}' } },
      ],
    });
    assert.deepEqual(messages[3], { role: 'tool', tool_call_id: 'c1', content: 'a.txt' });
    assert.deepEqual(messages[4], { role: 'tool', tool_call_id: 'c2', content: 'closed' });
    assert.deepEqual(messages[5], { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }] }, 'a tool output image follows the tool messages');
    assert.deepEqual(messages[6], { role: 'assistant', content: null, tool_calls: [{ id: 'c3', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }] });
    assert.deepEqual(messages[7], { role: 'tool', tool_call_id: 'c3', content: 'Done' });
    assert.equal(messages.length, 8);
  });

  it('forwards the chat-expressible fields and ignores the storage and client fields', () => {
    assert.deepEqual(Object.keys(chat).sort(), ['messages', 'model', 'parallel_tool_calls', 'prompt_cache_key', 'stream', 'tool_choice', 'tools']);
    assert.equal(chat.tool_choice, 'auto');
    assert.equal(reasoningEffort, 'medium');
    const route = (efforts: string[], params: string[]) => ({ reasoningEfforts: efforts, supportedParams: params });
    assert.equal(softReasoningEffort(chat, reasoningEffort, route(['low', 'medium'], ['reasoning_effort'])).reasoning_effort, 'medium');
    assert.equal(softReasoningEffort(chat, reasoningEffort, route(['low'], ['reasoning_effort'])).reasoning_effort, undefined);
    assert.equal(softReasoningEffort(chat, reasoningEffort, route(['medium'], [])).reasoning_effort, undefined);
  });

  it('maps tool_choice to the chat name, and drops a choice of a tool that was left out', () => {
    const tools = CODEX.tools;
    const choice = (tool_choice: unknown) => responsesToChat({ model: 'm', input: 'x', tools, tool_choice }).chat.tool_choice;
    assert.deepEqual(choice({ type: 'function', name: 'close_agent', namespace: 'multi_agent_v1' }), { type: 'function', function: { name: 'multi_agent_v1__close_agent' } });
    assert.deepEqual(choice({ type: 'custom', name: 'apply_patch' }), { type: 'function', function: { name: 'apply_patch' } });
    assert.equal(choice({ type: 'web_search' }), undefined);
    assert.equal(responsesToChat({ model: 'm', input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required' }).chat.tool_choice, undefined);
    assert.equal(responsesToChat({ model: 'm', input: 'x', tools: [{ type: 'web_search' }] }).chat.tools, undefined);
  });

  it('refuses what needs stored responses or cannot be read, naming the field', () => {
    const refused: Array<[Json, RegExp]> = [
      [{ model: 'm', input: 'x', previous_response_id: 'resp_1' }, /'previous_response_id'/],
      [{ model: 'm', input: [{ type: 'item_reference', id: 'x' }] }, /'input\[0\]\.type'/],
      [{ model: 'm', input: 'x', tools: [{ type: 'function' }] }, /'tools\[0\]\.name'/],
      [{ model: 'm', input: 'x', tools: [{ type: 'custom', name: '' }] }, /'tools\[0\]\.name'/],
      [{ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] }, /'input\[0\]\.call_id'/],
      [{ model: 'm', input: [{ type: 'reasoning', summary: [] }] }, /'input'/],
    ];
    for (const [body, message] of refused) assert.throws(() => responsesToChat(body), message, JSON.stringify(body));
  });
});

describe('responses surface: completion → response', () => {
  it('gives reasoning, message and tool call items, names mapped back, status and usage', () => {
    const { names } = responsesToChat(CODEX);
    const context = { ...responseContext('codex-model', names), base: 'b', createdAt: 5 };
    const response = chatToResponse({
      id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'up',
      choices: [{
        index: 0, finish_reason: 'tool_calls', message: {
          role: 'assistant', content: 'Running.', reasoning_content: 'plan',
          tool_calls: [
            { id: 'k1', type: 'function', function: { name: 'multi_agent_v1__close_agent', arguments: '{"target":"a"}' } },
            { id: 'k2', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } },
            { id: 'k3', type: 'function', function: { name: 'apply_patch', arguments: 'not json' } },
          ],
        },
      }],
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    }, context);
    assert.equal(response.id, 'resp_b');
    assert.equal(response.model, 'codex-model');
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'Running.');
    assert.deepEqual(response.output, [
      { type: 'reasoning', id: 'rs_b', summary: [{ type: 'summary_text', text: 'plan' }] },
      { type: 'message', id: 'msg_b', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Running.', annotations: [] }] },
      { type: 'function_call', id: 'fc_b_0', status: 'completed', call_id: 'k1', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{"target":"a"}' },
      { type: 'custom_tool_call', id: 'ctc_b_1', status: 'completed', call_id: 'k2', name: 'apply_patch', input: '*** Begin Patch' },
      { type: 'custom_tool_call', id: 'ctc_b_2', status: 'completed', call_id: 'k3', name: 'apply_patch', input: 'not json' },
    ]);
    assert.deepEqual(response.usage, { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 14 });
  });
});
