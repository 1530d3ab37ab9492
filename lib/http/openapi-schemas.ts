/**
 * The JSON Schemas of the API description, generated from the very zod objects the routes
 * validate with (`z.toJSONSchema`, draft 2020-12: the dialect of OpenAPI 3.1). A schema is
 * described as a client sends it (`io: 'input'`: a default makes a field optional, a coercion
 * accepts its input); what JSON Schema cannot say (a transform, a refinement) is left open.
 * Recursive parts come out as `$defs`, hoisted into `components.schemas` so every `$ref` resolves
 * against the document.
 */
import { z } from 'zod';

/** A JSON Schema (draft 2020-12) object. */
export type JsonSchema = Record<string, unknown>;

/** Collects the schemas hoisted out of generated ones (`components.schemas`). */
export class SchemaComponents {
  readonly schemas: Record<string, JsonSchema> = {};

  /** The JSON Schema of `schema` as a client sends it; its `$defs` land in `components.schemas` named after `name`. */
  input(schema: z.ZodType, name: string): JsonSchema {
    return this.generate(schema, name, 'input');
  }

  /** The JSON Schema of `schema` as the service answers it. */
  output(schema: z.ZodType, name: string): JsonSchema {
    return this.generate(schema, name, 'output');
  }

  private generate(schema: z.ZodType, name: string, io: 'input' | 'output'): JsonSchema {
    const generated = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
    const { $schema: _dialect, $defs, ...rest } = generated;
    const prefix = componentName(name);
    const rewrite = (node: unknown): unknown => rewriteRefs(node, prefix);
    for (const [defName, def] of Object.entries(($defs ?? {}) as Record<string, unknown>)) {
      this.schemas[`${prefix}_${componentName(defName)}`] = rewrite(def) as JsonSchema;
    }
    return rewrite(rest) as JsonSchema;
  }
}

/** `#/$defs/x` → `#/components/schemas/<prefix>_x`, everywhere in `node`. */
function rewriteRefs(node: unknown, prefix: string): unknown {
  if (Array.isArray(node)) return node.map((item) => rewriteRefs(item, prefix));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    out[key] = key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')
      ? `#/components/schemas/${prefix}_${componentName(value.slice('#/$defs/'.length))}`
      : rewriteRefs(value, prefix);
  }
  return out;
}

/** A component name OpenAPI accepts (`^[a-zA-Z0-9._-]+$`). */
export function componentName(text: string): string {
  return text.replace(/[^a-zA-Z0-9._-]+/g, '_').replace(/^_+|_+$/g, '') || 'schema';
}

/**
 * One OpenAPI query parameter per key of a zod object; required unless optional or defaulted. For
 * a union of objects (alternative parameter sets) every key is optional and says which set it is of.
 */
export function queryParameters(query: z.ZodObject | z.ZodUnion<readonly z.ZodObject[]>, components: SchemaComponents, name: string): Array<Record<string, unknown>> {
  if (query instanceof z.ZodObject) return objectParameters(query, components, name, undefined);
  const options = query.options;
  const all = options.flatMap((option, index) => objectParameters(option, components, name, `Alternative ${index + 1} of ${options.length}: ${Object.keys(option.shape).join(', ')}.`));
  // A name shared by two alternatives is listed once (OpenAPI: one parameter per name and place).
  return all.filter((parameter, index) => all.findIndex((other) => other.name === parameter.name) === index);
}

function objectParameters(query: z.ZodObject, components: SchemaComponents, name: string, alternative: string | undefined): Array<Record<string, unknown>> {
  return Object.entries(query.shape).map(([key, field]) => {
    const optin = (field as z.ZodType)._zod.optin;
    const schema = components.input(field as z.ZodType, `${name}_${key}`);
    const text = [typeof schema.description === 'string' ? schema.description : undefined, alternative].filter(Boolean).join(' ');
    return { name: key, in: 'query', required: alternative === undefined && optin === undefined, schema, ...(text ? { description: text } : {}) };
  });
}
