import { XMLBuilder, XMLParser, XMLValidator } from "fast-xml-parser";
import { invalid } from "./errors.js";
import { decodeXmlReference } from "./xml-references.js";
import { findStorageType, STORAGE_TYPES, type StorageType, type StorageTypeId } from "./storage-types.js";

export {
  findStorageType,
  HIDDEN_SECRET,
  SECRET_STORAGE_PROPERTIES,
  STORAGE_TYPES,
  type StorageProperty,
  type StorageType,
  type StorageTypeId,
} from "./storage-types.js";

/**
 * FeedStorageConfiguration (docs/compat.md 5.2). After validation `properties` holds every property
 * of the type under its canonical name, in declaration order, with null for "not set", so that
 * `GET /api/storage?feed=` shows the full shape and format -> parse is the identity.
 */
export interface StorageConfig {
  id: StorageTypeId;
  properties: Record<string, string | boolean | null>;
}

const CONFIG_ERROR = "INVALID_STORAGE_CONFIG";
const XML_ERROR = "INVALID_PACKAGE_STORE";

export function validateStorageConfig(input: unknown): StorageConfig {
  if (!isRecord(input)) throw invalid(CONFIG_ERROR, "storage configuration must be an object with id and properties");
  const { id, properties = {} } = input;
  if (typeof id !== "string" || id.trim() === "") throw invalid(CONFIG_ERROR, "storage type id is required");
  const type = findStorageType(id.trim());
  if (type === undefined) {
    const known = STORAGE_TYPES.map((t) => t.id).join(", ");
    throw invalid(CONFIG_ERROR, `unknown storage type '${id}' (known: ${known})`);
  }
  // Clients send null for "no properties"; docs/compat.md's disk example relies on defaults.
  if (properties !== null && !isRecord(properties)) {
    throw invalid(CONFIG_ERROR, "storage properties must be an object");
  }

  const canonicalByLower = new Map(Object.keys(type.properties).map((name) => [name.toLowerCase(), name]));
  const given = new Map<string, unknown>();
  for (const [key, value] of Object.entries(properties ?? {})) {
    const name = canonicalByLower.get(key.toLowerCase());
    if (name === undefined) throw invalid(CONFIG_ERROR, `unknown property '${key}' for ${type.id} storage`);
    if (given.has(name)) throw invalid(CONFIG_ERROR, `property '${name}' is given more than once`);
    given.set(name, value);
  }

  const result: Record<string, string | boolean | null> = {};
  for (const [name, property] of Object.entries(type.properties)) {
    const value = property.type === "boolean" ? toBoolean(name, given.get(name)) : toText(name, given.get(name));
    if (property.required && value === null) {
      throw invalid(CONFIG_ERROR, `property '${name}' is required for ${type.id} storage`);
    }
    result[name] = value;
  }
  return { id: type.id, properties: result };
}

/**
 * What Wharf's S3 store needs beyond the seed's shape (feeds' settings and WHARF_PACKAGE_STORE alike):
 * a bucket, an access key rather than host credentials, and an http(s) CustomServiceUrl.
 */
export function checkObjectStoreSupport(config: StorageConfig): void {
  if (config.id !== "s3") return;
  const { properties } = config;
  if (properties.BucketName === null)
    throw invalid("INVALID_STORAGE_CONFIG", "property 'BucketName' is required for s3 storage");
  // Credentials from the host (EC2 instance profiles, assumed roles) are not implemented: refused, not ignored.
  if (properties.InstanceRole !== null || properties.UseInstanceProfile === true) {
    throw invalid(
      "UNSUPPORTED_SETTING",
      "InstanceRole and UseInstanceProfile are not supported: give AccessKey and SecretAccessKey",
    );
  }
  const url = properties.CustomServiceUrl;
  if (typeof url === "string" && !/^https?:\/\/[^\s/]+/i.test(url)) {
    throw invalid("INVALID_STORAGE_CONFIG", "property 'CustomServiceUrl' must be an http or https URL");
  }
}

/** Empty strings mean "not set": HTML forms and pgutil options send them for cleared fields. */
function toText(name: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw invalid(CONFIG_ERROR, `property '${name}' must be a string`);
  return value.trim() === "" ? null : value;
}

/** Accepts JSON booleans and their spellings in strings (.NET persists `True`/`False`). */
function toBoolean(name: string, value: unknown): boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value === "boolean") return value;
  if (typeof value === "string") {
    const lower = value.trim().toLowerCase();
    if (lower === "") return null;
    if (lower === "true") return true;
    if (lower === "false") return false;
  }
  throw invalid(CONFIG_ERROR, `property '${name}' must be true or false`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---- Persisted XML (docs/seed-api.md "Feed (area I)") ----

const ATTRIBUTE_PREFIX = "@_";

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: ATTRIBUTE_PREFIX,
  // No entity processing at all: no DOCTYPE entity expansion (billion laughs); the five predefined
  // entities and character references are decoded by decodeReferences below.
  processEntities: false,
  htmlEntities: false,
  parseAttributeValue: false,
  parseTagValue: false,
  // It would also trim attribute values, and leading or trailing spaces in a value are data.
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

const builder = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: ATTRIBUTE_PREFIX,
  // Otherwise a value of "true" is written as a bare attribute name, which is not XML.
  suppressBooleanAttributes: false,
  suppressEmptyNode: true,
});

const ELEMENT_NAMES: Record<StorageTypeId, string> = {
  disk: "DiskPackageStore",
  s3: "S3PackageStore",
  azure: "AzurePackageStore",
};

export function parsePackageStoreXml(xml: string): StorageConfig {
  if (typeof xml !== "string" || xml.trim() === "") throw invalid(XML_ERROR, "package store XML is empty");
  const { elementName, root } = parseRoot(xml);
  const properties = readProperties(root);
  const id = identifyStore(elementName, Object.keys(properties));
  return validateStorageConfig({ id, properties });
}

/** Validates first, so only canonical property names (valid XML names) become attributes. */
export function formatPackageStoreXml(config: StorageConfig): string {
  const { id, properties } = validateStorageConfig(config);
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(properties)) {
    if (value !== null) attributes[`${ATTRIBUTE_PREFIX}${name}`] = String(value);
  }
  return builder.build({
    [ELEMENT_NAMES[id]]: { [`${ATTRIBUTE_PREFIX}Assembly`]: "Wharf", Properties: attributes },
  });
}

function parseRoot(xml: string): { elementName: string; root: unknown } {
  // The parser is lenient (it accepts unclosed tags), so check well-formedness first.
  const validation = XMLValidator.validate(xml);
  if (validation !== true) {
    const { msg, line, col } = validation.err;
    // The validator leaves col undefined for some errors (e.g. no start tag at all).
    const where = line === undefined ? "" : col === undefined ? ` (line ${line})` : ` (line ${line}, column ${col})`;
    throw invalid(XML_ERROR, `package store XML is malformed: ${msg}${where}`);
  }
  let document: unknown;
  try {
    document = parser.parse(xml);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw invalid(XML_ERROR, `package store XML is malformed: ${reason}`, { cause: error });
  }
  const entries = isRecord(document) ? Object.entries(document) : [];
  const [first] = entries;
  // Sibling roots with the same name come back as one array entry.
  if (entries.length !== 1 || first === undefined || Array.isArray(first[1])) {
    throw invalid(XML_ERROR, "package store XML must have exactly one root element");
  }
  return { elementName: first[0], root: first[1] };
}

/** Attributes of the single `Properties` child, decoded; element content is not used by any store. */
function readProperties(root: unknown): Record<string, string> {
  const properties = isRecord(root) ? root.Properties : undefined;
  if (Array.isArray(properties)) throw invalid(XML_ERROR, "package store XML has more than one Properties element");
  if (!isRecord(properties)) return {};
  const entries: [string, string][] = [];
  for (const [key, value] of Object.entries(properties)) {
    if (!key.startsWith(ATTRIBUTE_PREFIX) || typeof value !== "string") continue;
    const name = key.slice(ATTRIBUTE_PREFIX.length);
    entries.push([name, decodeReferences(name, value)]);
  }
  // fromEntries defines own properties, so an attribute named __proto__ cannot touch the prototype.
  return Object.fromEntries(entries);
}

// The class name is a product's (e.g. Inedo.ProGet....S3PackageStore); only its kind matters here.
function identifyStore(elementName: string, propertyNames: readonly string[]): StorageTypeId {
  const name = elementName.toLowerCase();
  if (name.includes("s3")) return "s3";
  if (name.includes("azure") || name.includes("blob")) return "azure";
  if (name.includes("disk") || name.includes("filesystem")) return "disk";
  // A renamed or custom class: guess from properties only one type has (TargetPath is shared).
  const lowerNames = new Set(propertyNames.map((p) => p.toLowerCase()));
  const owners = (property: string) => STORAGE_TYPES.filter((type) => hasProperty(type, property));
  const candidates = new Set(
    [...lowerNames].flatMap((property) => {
      const found = owners(property);
      return found.length === 1 ? found.map((type) => type.id) : [];
    }),
  );
  const [only] = candidates;
  if (candidates.size === 1 && only !== undefined) return only;
  throw invalid(XML_ERROR, `unknown package store '${elementName}'`);
}

function hasProperty(type: StorageType, lowerName: string): boolean {
  return Object.keys(type.properties).some((known) => known.toLowerCase() === lowerName);
}

/**
 * Resolves `&name;`, `&#n;` and `&#xh;` in an attribute value. Anything else (a DOCTYPE-declared
 * entity, a bare `&`) is refused rather than kept, since it would never mean what the author meant.
 */
function decodeReferences(attribute: string, raw: string): string {
  // Not well-formed XML, but fast-xml-parser's validator lets it through.
  if (raw.includes("<")) throw invalid(XML_ERROR, `package store XML: attribute '${attribute}' contains a raw '<'`);
  return raw.replace(/&([^&;\s]*)(;?)/g, (whole: string, body: string, semicolon: string) => {
    const decoded = semicolon === ";" ? decodeXmlReference(body) : undefined;
    if (decoded === undefined) {
      throw invalid(
        XML_ERROR,
        `package store XML: attribute '${attribute}' has an unsupported entity reference '${whole}' ` +
          "(only &amp; &lt; &gt; &quot; &apos; and valid character references are allowed)",
      );
    }
    return decoded;
  });
}
