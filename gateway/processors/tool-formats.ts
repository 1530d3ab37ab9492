/**
 * The textual tool-call syntaxes: Qwen3-Coder XML and GLM arg_key/arg_value. Each parser gets the
 * text between `<tool_call>` and `</tool_call>` and rejects anything but whitespace outside the
 * elements it knows (a rejected block is emitted as raw content by the splitter).
 */
import { type ParsedCall } from './text';
import { type ToolFormat, isName, parseArgValue } from './tool-calls';

const QWEN_FUNCTION = /^\s*<function=([^>\n]*)>/;
const QWEN_FUNCTION_END = '</function>';
/** A parameter ends at `</parameter>`, or (lenient) where the next parameter or the body ends. */
const QWEN_PARAMETER = /<parameter=([^>\n]*)>([\s\S]*?)(?:<\/parameter>|(?=<parameter=)|$)/g;
const GLM_ARG = /<arg_key>([\s\S]*?)<\/arg_key>\s*<arg_value>([\s\S]*?)<\/arg_value>/g;

/**
 * Collects key/value matches of `pattern` (groups 1 and 2) that make up all of `text` apart from
 * whitespace; undefined if anything else is there or a key is not a name.
 */
function collectArgs(text: string, pattern: RegExp): Record<string, unknown> | undefined {
  const entries: [string, unknown][] = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const key = (match[1] ?? '').trim();
    if (text.slice(last, match.index).trim() !== '' || !isName(key)) return undefined;
    entries.push([key, parseArgValue(match[2] ?? '')]);
    last = match.index + match[0].length;
  }
  if (text.slice(last).trim() !== '') return undefined;
  // fromEntries defines own properties, so a key such as `__proto__` is kept as data.
  return Object.fromEntries(entries);
}

/** `<function=NAME>` then `<parameter=ARG>\nVALUE\n</parameter>`..., then `</function>`. */
function parseQwenCoder(body: string): ParsedCall | undefined {
  const head = QWEN_FUNCTION.exec(body);
  const name = head?.[1]?.trim() ?? '';
  if (head === null || !isName(name)) return undefined;
  let params = body.slice(head[0].length);
  const end = params.lastIndexOf(QWEN_FUNCTION_END);
  if (end >= 0) {
    if (params.slice(end + QWEN_FUNCTION_END.length).trim() !== '') return undefined;
    params = params.slice(0, end);
  }
  const args = collectArgs(params, QWEN_PARAMETER);
  return args && { name, args };
}

/** `NAME` then `<arg_key>K</arg_key><arg_value>V</arg_value>`... (whitespace between allowed). */
function parseGlm(body: string): ParsedCall | undefined {
  const first = body.indexOf('<arg_key>');
  const name = (first < 0 ? body : body.slice(0, first)).trim();
  if (!isName(name)) return undefined;
  const args = first < 0 ? {} : collectArgs(body.slice(first), GLM_ARG);
  return args && { name, args };
}

/** Qwen3-Coder: `<tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n</function>\n</tool_call>`. */
export const QWEN_CODER_FORMAT: ToolFormat = { open: '<tool_call>', close: '</tool_call>', parse: parseQwenCoder };

/** GLM: `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>`. */
export const GLM_FORMAT: ToolFormat = { open: '<tool_call>', close: '</tool_call>', parse: parseGlm };
