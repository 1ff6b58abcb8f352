import { invalid } from "./errors.js";
import {
  isHttpUrl,
  isPlainObject,
  manifestToJson,
  quote,
  validateManifest,
  type UpackManifest,
} from "./upack-manifest.js";
import { groupProblem, nameProblem, parsePackageIdentification } from "./upack-range.js";
import { parseVersion, type UpackVersion, versionProblem } from "./upack-version.js";

/**
 * Virtual packages (docs/compat.md 1.6): a manifest whose `contents` (and optional `metaContents`) say
 * where the package's files come from; the server assembles the real package on download. It
 * arrives either as a plain JSON `.vpack` file (old spec) or as the `upack.json` of a ZIP (current
 * doc, and what InedoCore uploads); both end up here, the caller having read the ZIP.
 */

/** Where an entry's files come from. */
export type VirtualSource =
  | {
      readonly kind: "package";
      /** "" for the empty group. The package is looked up in the same feed. */
      readonly group: string;
      readonly name: string;
      readonly version: UpackVersion;
      /** Lower-case SHA-1 the referenced package file must have. */
      readonly sha1?: string;
      /** Folder of the referenced package to take, normalised like virtualPath; default `package`. */
      readonly packagePath: string;
    }
  | { readonly kind: "url"; readonly url: string; readonly sha1?: string }
  /** `{ feed, asset }`: shown by the current doc only, for a file of an asset directory. */
  | { readonly kind: "asset"; readonly feed: string; readonly asset: string };

export interface VirtualContentItem {
  readonly type: "virtualDirectory" | "virtualFile";
  /**
   * Relative to `package/` (contents) or to the archive root (metaContents), without leading or
   * trailing '/'; "" is that root. Read from `virtualPath`, or `targetPath` as the current doc writes it.
   */
  readonly virtualPath: string;
  readonly source: VirtualSource;
}

export interface VirtualManifest extends UpackManifest {
  readonly contents: readonly VirtualContentItem[];
  readonly metaContents: readonly VirtualContentItem[];
}

export interface ParseVirtualManifestOptions {
  /** Prefix of error messages; defaults to ".vpack" for text and "upack.json" for an object. */
  label?: string;
}

const SHA1 = /^[0-9A-Fa-f]{40}$/;
const TYPES = ["virtualDirectory", "virtualFile"] as const;

/**
 * Validates the whole manifest (validateManifest's rules, which check every property's nesting
 * depth first, plus the content entries). `input` is the `.vpack` text or bytes (UTF-8, a BOM is
 * ignored) or the already parsed upack.json object. Throws an `invalid` DomainError
 * (INVALID_MANIFEST) naming the field, e.g. `'contents[2].source'` or `'_x'` nested too deep.
 */
export function parseVirtualManifest(input: unknown, options: ParseVirtualManifestOptions = {}): VirtualManifest {
  const isText = typeof input === "string" || input instanceof Uint8Array;
  const label = options.label ?? (isText ? ".vpack" : "upack.json");
  const fail = (message: string) => invalid("INVALID_MANIFEST", `${label}: ${message}`);
  let json = input;
  if (isText) {
    // TextDecoder drops a UTF-8 BOM, which Windows editors like to write; a string may still carry one.
    const text = typeof input === "string" ? input.replace(/^\uFEFF/, "") : new TextDecoder().decode(input);
    try {
      json = JSON.parse(text);
    } catch {
      throw fail("the manifest is not valid JSON");
    }
  }
  const manifest = validateManifest(json, { label });
  const raw = json as Record<string, unknown>;
  if (raw.contents === undefined || raw.contents === null) throw fail("'contents' is required in a virtual package");
  const contents = parseItems(raw.contents, "contents", fail);
  if (contents.length === 0) throw fail("'contents' must have at least one entry");
  const metaContents = raw.metaContents == null ? [] : parseItems(raw.metaContents, "metaContents", fail);
  return { ...manifest, contents, metaContents };
}

/** The manifest of the assembled package: the virtual one without `contents` and `metaContents`. */
export function assembledManifestJson(manifest: UpackManifest): Record<string, unknown> {
  const json = manifestToJson(manifest);
  return Object.fromEntries(Object.entries(json).filter(([key]) => key !== "contents" && key !== "metaContents"));
}

type Fail = (message: string) => Error;

function parseItems(value: unknown, field: "contents" | "metaContents", fail: Fail): VirtualContentItem[] {
  if (!Array.isArray(value)) throw fail(`'${field}' must be an array`);
  return value.map((item: unknown, index) => {
    const at = `${field}[${index}]`;
    const parsed = parseItem(item, at, fail);
    if (field === "metaContents") {
      // The manifest can never be virtualised, and `package/` is what `contents` is for.
      const path = parsed.virtualPath.toLowerCase();
      if (path === "upack.json" || path === "package" || path.startsWith("package/")) {
        throw fail(`'${at}.virtualPath' ${quote(parsed.virtualPath)} is not allowed in metaContents`);
      }
    }
    return parsed;
  });
}

function parseItem(item: unknown, at: string, fail: Fail): VirtualContentItem {
  // A bare string is a package identification string or a URL, placed at the root.
  if (typeof item === "string")
    return { type: "virtualDirectory", virtualPath: "", source: sourceFromString(item, at, fail) };
  if (!isPlainObject(item)) throw fail(`'${at}' must be a string or an object`);

  let type: VirtualContentItem["type"] = "virtualDirectory";
  if (item.type !== undefined) {
    const match = TYPES.find((name) => typeof item.type === "string" && name.toLowerCase() === item.type.toLowerCase());
    if (!match) throw fail(`'${at}.type' must be 'virtualDirectory' or 'virtualFile'`);
    type = match;
  }
  const virtualPath = relativePath(item.virtualPath, `${at}.virtualPath`, fail);
  const targetPath = relativePath(item.targetPath, `${at}.targetPath`, fail);
  if (virtualPath !== undefined && targetPath !== undefined && virtualPath !== targetPath) {
    throw fail(`'${at}.virtualPath' and '${at}.targetPath' disagree`);
  }
  const path = virtualPath ?? targetPath ?? "";
  if (type === "virtualFile" && path === "") throw fail(`'${at}.virtualPath' is required for a virtualFile`);
  return { type, virtualPath: path, source: parseSource(item.source, `${at}.source`, fail) };
}

function parseSource(value: unknown, at: string, fail: Fail): VirtualSource {
  if (value === undefined || value === null) throw fail(`'${at}' is required`);
  if (typeof value === "string") return sourceFromString(value, at, fail);
  if (!isPlainObject(value)) throw fail(`'${at}' must be a string or an object`);
  const text = (key: string, required: boolean): string | undefined => {
    const field = value[key];
    if (field === undefined || field === null) {
      if (required) throw fail(`'${at}.${key}' is required`);
      return undefined;
    }
    if (typeof field !== "string") throw fail(`'${at}.${key}' must be a string`);
    return field;
  };
  const hash = (): { sha1?: string } => {
    const sha1 = text("hash", false);
    if (sha1 === undefined) return {};
    if (!SHA1.test(sha1)) throw fail(`'${at}.hash' must be a SHA-1 hash (40 hexadecimal digits)`);
    return { sha1: sha1.toLowerCase() };
  };

  if ("url" in value) {
    const url = text("url", true) ?? "";
    if (!isHttpUrl(url)) throw fail(`'${at}.url' ${quote(url)} must be an absolute http(s) URL`);
    return { kind: "url", url, ...hash() };
  }
  if ("feed" in value || "asset" in value) {
    const feed = text("feed", true) ?? "";
    if (feed.trim() === "") throw fail(`'${at}.feed' must not be empty`);
    const asset = relativePath(value.asset, `${at}.asset`, fail) ?? "";
    if (asset === "") throw fail(`'${at}.asset' is required`);
    return { kind: "asset", feed, asset };
  }
  const group = text("group", false) ?? "";
  const badGroup = groupProblem(group);
  if (badGroup) throw fail(`'${at}.group' ${quote(group)} ${badGroup}`);
  const name = text("name", true) ?? "";
  const badName = nameProblem(name);
  if (badName) throw fail(`'${at}.name' ${quote(name)} ${badName}`);
  const versionText = text("version", true) ?? "";
  const version = parseVersion(versionText);
  if (!version) throw fail(`'${at}.version' ${quote(versionText)} ${versionProblem(versionText)}`);
  const packagePath = relativePath(value.packagePath, `${at}.packagePath`, fail) ?? "package";
  return { kind: "package", group, name, version, packagePath, ...hash() };
}

function sourceFromString(text: string, at: string, fail: Fail): VirtualSource {
  if (isHttpUrl(text)) return { kind: "url", url: text };
  const id = parsePackageIdentification(text);
  if (!id) throw fail(`'${at}' ${quote(text)} is neither a package identification string nor an http(s) URL`);
  const { group, name, version, sha1 } = id;
  return sha1 === undefined
    ? { kind: "package", group, name, version, packagePath: "package" }
    : { kind: "package", group, name, version, sha1, packagePath: "package" };
}

/**
 * Undefined when absent or null; otherwise the path without leading or trailing '/' ("" and "/"
 * mean the root). Refuses what could escape the target folder or means different things on
 * different systems: '.' and '..' segments, empty segments, backslashes and control characters.
 */
function relativePath(value: unknown, at: string, fail: Fail): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw fail(`'${at}' must be a string`);
  const path = value.replace(/^\/+|\/+$/g, "");
  if (path === "") return "";
  const segments = path.split("/");
  if (/[\\\p{Cc}]/u.test(path) || segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    throw fail(`'${at}' ${quote(value)} must be a relative path without '.', '..', '//' or '\\'`);
  }
  return path;
}
