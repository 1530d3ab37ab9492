/**
 * Messages-surface `tools` and `tool_choice` as chat-completions function tools
 * (docs/inference-surfaces.md "Messages surface"). Only client tools (no `type`, or `custom`) can be
 * served by a chat route. A tool merely offered is never refused: one of another type (a server or
 * vendor-defined tool) is left out, and so is a deferred one (`defer_loading: true`) until a
 * `tool_reference` in the conversation has loaded it, as a messages API would show the model.
 */
import { invalid } from './errors';

type Json = Record<string, unknown>;

/**
 * `{name, description, input_schema}` → `{type: "function", function: {name, description, parameters}}`;
 * other fields of a tool (`cache_control`, `strict`, `input_examples`, …) are dropped. `referenced`:
 * the deferred tools a `tool_reference` has loaded.
 */
export function chatTools(tools: unknown, referenced: ReadonlySet<string> = new Set()): Json[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalid('tools', 'must be a list');
  const out: Json[] = [];
  tools.forEach((raw: unknown, i) => {
    const where = `tools[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(where, 'must be an object');
    const tool = raw as Json;
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') return;
    if (tool.defer_loading !== undefined && typeof tool.defer_loading !== 'boolean') throw invalid(`${where}.defer_loading`, 'must be a boolean');
    if (tool.defer_loading === true && !(typeof tool.name === 'string' && referenced.has(tool.name))) return;
    if (typeof tool.name !== 'string' || tool.name.length === 0) throw invalid(`${where}.name`, 'must be a non-empty string');
    if (tool.input_schema === null || typeof tool.input_schema !== 'object' || Array.isArray(tool.input_schema)) throw invalid(`${where}.input_schema`, 'must be a JSON schema object');
    if (tool.description !== undefined && typeof tool.description !== 'string') throw invalid(`${where}.description`, 'must be a string');
    const fn: Json = { name: tool.name, parameters: tool.input_schema };
    if (tool.description !== undefined) fn.description = tool.description;
    out.push({ type: 'function', function: fn });
  });
  return out;
}

/** `auto` → `auto`, `any` → `required`, `tool` → that function, `none` → `none`; `disable_parallel_tool_use` kept. */
export function chatToolChoice(raw: unknown): { choice: unknown; parallel?: false } | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid('tool_choice', 'must be an object');
  const c = raw as Json;
  const parallel = c.disable_parallel_tool_use === true ? { parallel: false as const } : {};
  switch (c.type) {
    case 'auto': return { choice: 'auto', ...parallel };
    case 'any': return { choice: 'required', ...parallel };
    case 'none': return { choice: 'none' };
    case 'tool':
      if (typeof c.name !== 'string' || c.name.length === 0) throw invalid('tool_choice.name', 'must name a tool');
      return { choice: { type: 'function', function: { name: c.name } }, ...parallel };
    default: throw invalid('tool_choice.type', 'must be one of auto, any, tool, none');
  }
}
