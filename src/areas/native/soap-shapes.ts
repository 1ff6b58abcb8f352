import { z } from "zod";
import type { NativeMethod } from "./registry.js";

/**
 * What a native method's result looks like in XML, derived from its zod result schema (through
 * z.toJSONSchema) so that the WSDL's types and the answers written follow one description, for
 * any method in the registry. The WSDL declares each shape (soap-wsdl.ts); answers are written
 * by walking the same shape (soap-response.ts), fields in the schema's order as xs:sequence needs.
 *
 * - object: its fields as child elements, optional ones minOccurs=0;
 * - array (a table): a sequence of `<Row>` elements;
 * - map (a record): a sequence of `<Entry><Key/><Value/></Entry>`;
 * - scalar: xs:string (with its enumeration when closed), xs:long, xs:double, xs:boolean, xs:base64Binary;
 * - any: what the schema cannot say in XSD (a union of kinds, an unrepresentable type), written as text.
 */
export type Shape =
  | { readonly kind: "object"; readonly fields: readonly Field[] }
  | { readonly kind: "array"; readonly row: Shape; readonly nillableRows: boolean }
  | { readonly kind: "map"; readonly value: Shape }
  | { readonly kind: "scalar"; readonly xsd: ScalarType; readonly values?: readonly string[] }
  | { readonly kind: "any" };

export type ScalarType = "string" | "long" | "double" | "boolean" | "base64Binary";

export interface Field {
  /** The member's name in the method's result (JSON). */
  readonly name: string;
  /** Its element name: the member's name, XML-encoded where it is no XML name (xmlName()). */
  readonly element: string;
  readonly shape: Shape;
  readonly required: boolean;
  readonly nillable: boolean;
}

/** The element name of each array item. */
export const ROW_ELEMENT = "Row";

const ANY: Shape = { kind: "any" };
/** Past this depth a schema (a recursive one) is described as `any` rather than followed. */
const MAX_SHAPE_DEPTH = 16;

type JsonSchema = Record<string, unknown>;

const shapes = new WeakMap<NativeMethod, Shape | undefined>();

/** The shape of the method's result, undefined for a method that returns nothing; computed once. */
export function resultShapeOf(method: NativeMethod): Shape | undefined {
  if (shapes.has(method)) return shapes.get(method);
  const shape = method.result === undefined ? undefined : shapeOfSchema(method.result);
  shapes.set(method, shape);
  return shape;
}

/** A zod schema's shape; a schema zod cannot describe as JSON Schema becomes `any`, never an error. */
export function shapeOfSchema(schema: z.ZodType): Shape {
  let root: JsonSchema;
  try {
    root = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  } catch {
    return ANY;
  }
  return new ShapeReader(root).read(root, 0).shape;
}

interface Read {
  readonly shape: Shape;
  readonly nillable: boolean;
}

class ShapeReader {
  constructor(private readonly root: JsonSchema) {}

  read(schema: JsonSchema, depth: number): Read {
    if (depth > MAX_SHAPE_DEPTH) return { shape: ANY, nillable: true };
    const resolved = this.resolve(schema, depth);
    const options = (resolved.anyOf ?? resolved.oneOf) as JsonSchema[] | undefined;
    if (Array.isArray(options)) return this.union(options, depth);
    const types = typeList(resolved.type);
    const nillable = types.includes("null");
    const kinds = types.filter((type) => type !== "null");
    if (kinds.length !== 1) return { shape: constShape(resolved) ?? ANY, nillable };
    return { shape: this.ofType(kinds[0] as string, resolved, depth), nillable };
  }

  private ofType(type: string, schema: JsonSchema, depth: number): Shape {
    switch (type) {
      case "object":
        return this.object(schema, depth);
      case "array": {
        const items = isSchema(schema.items) ? this.read(schema.items, depth + 1) : { shape: ANY, nillable: true };
        return { kind: "array", row: items.shape, nillableRows: items.nillable };
      }
      case "string": {
        const values = Array.isArray(schema.enum) ? schema.enum.map(String) : undefined;
        if (values) return { kind: "scalar", xsd: "string", values };
        return { kind: "scalar", xsd: schema.contentEncoding === "base64" ? "base64Binary" : "string" };
      }
      case "integer":
        return { kind: "scalar", xsd: "long" };
      case "number":
        return { kind: "scalar", xsd: "double" };
      case "boolean":
        return { kind: "scalar", xsd: "boolean" };
      default:
        return ANY;
    }
  }

  private object(schema: JsonSchema, depth: number): Shape {
    const properties = isSchema(schema.properties) ? schema.properties : undefined;
    if (properties === undefined || Object.keys(properties).length === 0) {
      if (isSchema(schema.additionalProperties)) {
        return { kind: "map", value: this.read(schema.additionalProperties, depth + 1).shape };
      }
      return { kind: "object", fields: [] };
    }
    const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
    const fields = Object.entries(properties).map(([name, property]): Field => {
      const read = isSchema(property) ? this.read(property, depth + 1) : { shape: ANY, nillable: true };
      return { name, element: xmlName(name), shape: read.shape, required: required.has(name), nillable: read.nillable };
    });
    return { kind: "object", fields };
  }

  /** `T | null` is T, nillable; any other union has no XSD equivalent here and is written as text. */
  private union(options: JsonSchema[], depth: number): Read {
    const isNull = (option: JsonSchema) => typeList(option.type).join() === "null";
    const others = options.filter((option) => !isNull(option));
    const nillable = others.length < options.length;
    if (others.length === 1) {
      const read = this.read(others[0] as JsonSchema, depth + 1);
      return { shape: read.shape, nillable: nillable || read.nillable };
    }
    return { shape: ANY, nillable };
  }

  /** Follows local `$ref`s (`#` and `#/$defs/<name>`), which zod writes for recursive schemas. */
  private resolve(schema: JsonSchema, depth: number): JsonSchema {
    let current = schema;
    for (let hops = 0; typeof current.$ref === "string" && hops + depth <= MAX_SHAPE_DEPTH; hops++) {
      const ref = current.$ref;
      const target =
        ref === "#"
          ? this.root
          : ref.startsWith("#/$defs/")
            ? (this.root.$defs as Record<string, unknown> | undefined)?.[ref.slice("#/$defs/".length)]
            : undefined;
      if (!isSchema(target)) return {};
      current = target;
    }
    return current;
  }
}

function constShape(schema: JsonSchema): Shape | undefined {
  if (typeof schema.const === "string") return { kind: "scalar", xsd: "string", values: [schema.const] };
  return undefined;
}

function typeList(type: unknown): string[] {
  if (typeof type === "string") return [type];
  return Array.isArray(type) ? type.filter((t): t is string => typeof t === "string") : [];
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const NAME_START = /[A-Za-z_\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D]/;
const NAME_CHAR = /[-.0-9A-Za-z_\u00B7\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u037D\u037F-\u1FFF\u200C-\u200D\u203F-\u2040]/;

/**
 * A member name as an XML element name, the way .NET's XmlConvert.EncodeLocalName does: each
 * character that may not stand there becomes `_xHHHH_` (a `_x` that could be read as such an
 * escape is escaped too). Result member names are PascalCase words, so this almost never applies;
 * it keeps the WSDL well-formed for any schema.
 */
export function xmlName(name: string): string {
  if (name === "") return "_x0000_";
  let encoded = "";
  const chars = [...name];
  chars.forEach((char, index) => {
    const allowed = index === 0 ? NAME_START.test(char) : NAME_CHAR.test(char);
    const looksEscaped = char === "_" && /^x[0-9A-Fa-f]{4}_/.test(chars.slice(index + 1, index + 7).join(""));
    encoded +=
      allowed && !looksEscaped
        ? char
        : `_x${(char.codePointAt(0) ?? 0)
            .toString(16)
            .toUpperCase()
            .padStart(char.length > 1 ? 8 : 4, "0")}_`;
  });
  return encoded;
}
