import { z } from "zod";

/**
 * What a method returns, for the reference page, read from its zod result schema through its JSON
 * Schema (z.toJSONSchema, the same description the SOAP service's WSDL types come from): a
 * sentence for the whole result and one row per field, nested fields by path (`Table[].Column`).
 * Works for any schema another area declares: what JSON Schema cannot express shows as `any`,
 * never as an error.
 */

export interface ResultField {
  /** `Column`, or `Table[].Column` inside a table (an array of rows) of an object result. */
  readonly path: string;
  readonly type: string;
  /** Always present (in the object's `required`); optional fields may be left out. */
  readonly required: boolean;
  readonly description: string | undefined;
}

export interface ResultOutline {
  /** The whole result in a few words, e.g. `array of Applications_Extended row`; `none` for no result. */
  readonly shape: string;
  readonly description: string | undefined;
  readonly fields: readonly ResultField[];
}

type JsonSchema = {
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly not?: JsonSchema;
  readonly format?: string;
  readonly $ref?: string;
  readonly $defs?: Readonly<Record<string, JsonSchema>>;
};

/** Deeper than any native result (DataSet -> table -> row -> column); stops recursive schemas. */
const MAX_DEPTH = 8;

export function resultOutline(schema: z.ZodType | undefined): ResultOutline {
  if (schema === undefined) return { shape: "none", description: undefined, fields: [] };
  let root: JsonSchema;
  try {
    // "input": methods return z.input of their schema and the transports send it as is.
    root = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", cycles: "ref" }) as JsonSchema;
  } catch {
    return { shape: "any", description: undefined, fields: [] };
  }
  const resolve = (node: JsonSchema): JsonSchema => {
    const name = node.$ref?.match(/^#\/\$defs\/(.+)$/)?.[1];
    return (name !== undefined ? root.$defs?.[name] : undefined) ?? node;
  };
  const fields: ResultField[] = [];
  const visit = (node: JsonSchema, path: string, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    const resolved = resolve(node);
    for (const variant of variantsOf(resolved)) {
      const shown = resolve(variant);
      if (shown.type === "array" && shown.items !== undefined) {
        visit(shown.items, `${path}[]`, depth + 1);
        continue;
      }
      const required = new Set(shown.required ?? []);
      for (const [name, child] of Object.entries(shown.properties ?? {})) {
        const childPath = path === "" ? name : path === "[]" ? name : `${path}.${name}`;
        const described = resolve(child);
        fields.push({
          path: childPath,
          type: typeLabel(described, resolve),
          required: required.has(name),
          description: described.description ?? elementDescription(described, resolve),
        });
        visit(described, childPath, depth + 1);
      }
    }
  };
  visit(root, "", 0);
  return { shape: typeLabel(root, resolve), description: root.description, fields: dedupe(fields) };
}

/** The members of a union (`a | b`, nullable) to look into; the node itself otherwise. */
function variantsOf(node: JsonSchema): readonly JsonSchema[] {
  return node.anyOf ?? node.oneOf ?? [node];
}

function typeLabel(node: JsonSchema, resolve: (node: JsonSchema) => JsonSchema, depth = 0): string {
  if (depth > MAX_DEPTH) return "any";
  const variants = node.anyOf ?? node.oneOf;
  if (variants !== undefined) return variants.map((v) => typeLabel(resolve(v), resolve, depth + 1)).join(" or ");
  if (node.not !== undefined && Object.keys(node.not).length === 0) return "nothing";
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (node.enum !== undefined) return `one of ${node.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  const types = node.type === undefined ? [] : typeof node.type === "string" ? [node.type] : node.type;
  if (types.length === 0) return "any";
  return types
    .map((type) => {
      if (type === "array") {
        const items = node.items === undefined ? undefined : resolve(node.items);
        if (items === undefined) return "array";
        if (items.not !== undefined) return "array (always empty)";
        const item = items.type === "object" && items.description !== undefined ? items.description : undefined;
        return `array of ${item ?? typeLabel(items, resolve, depth + 1)}`;
      }
      if (type === "string" && node.format !== undefined) return `string (${node.format})`;
      return type;
    })
    .join(" or ");
}

/** An array's own description, or else its rows' (`Applications_Extended row`). */
function elementDescription(node: JsonSchema, resolve: (node: JsonSchema) => JsonSchema): string | undefined {
  return node.type === "array" && node.items !== undefined ? resolve(node.items).description : undefined;
}

/** Union members may repeat the same field; the first mention stays. */
function dedupe(fields: readonly ResultField[]): ResultField[] {
  const seen = new Set<string>();
  return fields.filter((field) => !seen.has(field.path) && seen.add(field.path));
}
