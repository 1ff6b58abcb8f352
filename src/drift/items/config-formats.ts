/**
 * Reading and setting one key in a JSON, INI or `.env` file's text, keeping the rest of the file:
 * JSON is parsed and printed again with the file's own indentation (and final newline); INI and
 * `.env` files are edited line by line, so comments, order, blank lines and the other keys stay
 * exactly as they were. Line endings (LF or CRLF) and a UTF-8 BOM are kept.
 */
import type { ConfigKeyValue } from "./schema.js";

export type ConfigFormat = "json" | "ini" | "env";

/** A key's value as found; `found` false when the file does not have the key. */
export type Lookup = { readonly found: false } | { readonly found: true; readonly value: unknown };

export class ConfigFormatError extends Error {
  override readonly name = "ConfigFormatError";
}

export function readKey(format: ConfigFormat, text: string, key: string): Lookup {
  const { body } = splitBom(text);
  if (format === "json") return readJsonKey(body, key);
  if (format === "ini") return readIniKey(body, key);
  return readEnvKey(body, key);
}

/** The text with the key set to `value`, or removed when `value` is undefined. */
export function writeKey(format: ConfigFormat, text: string, key: string, value: ConfigKeyValue | undefined): string {
  const { bom, body } = splitBom(text);
  const eol = body.includes("\r\n") ? "\r\n" : "\n";
  const lf = body.replace(/\r\n/g, "\n");
  let written: string;
  if (format === "json") written = writeJsonKey(lf, key, value);
  else if (format === "ini") written = writeIniKey(lf, key, value === undefined ? undefined : String(value));
  else written = writeEnvKey(lf, key, value === undefined ? undefined : String(value));
  return bom + (eol === "\r\n" ? written.replace(/\n/g, "\r\n") : written);
}

function splitBom(text: string): { bom: string; body: string } {
  return text.startsWith("\uFEFF") ? { bom: "\uFEFF", body: text.slice(1) } : { bom: "", body: text };
}

// ---- JSON -------------------------------------------------------------------------------------

function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigFormatError("is not valid JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ConfigFormatError("does not hold a JSON object");
  }
  return parsed as Record<string, unknown>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function readJsonKey(text: string, key: string): Lookup {
  let current: unknown = parseJsonObject(text);
  for (const segment of key.split(".")) {
    // Own properties only: `__proto__` or `constructor` never reach Object.prototype.
    if (!isObject(current) || !Object.hasOwn(current, segment)) return { found: false };
    current = current[segment];
  }
  return { found: true, value: current };
}

function writeJsonKey(text: string, key: string, value: ConfigKeyValue | undefined): string {
  const root = parseJsonObject(text);
  const segments = key.split(".");
  const last = segments.pop() ?? "";
  let current = root;
  for (const [index, segment] of segments.entries()) {
    const next = Object.hasOwn(current, segment) ? current[segment] : undefined;
    if (next === undefined) {
      if (value === undefined) return text; // nothing to remove
      const created: Record<string, unknown> = {};
      Object.defineProperty(current, segment, { value: created, enumerable: true, writable: true, configurable: true });
      current = created;
    } else if (isObject(next)) {
      current = next;
    } else {
      throw new ConfigFormatError(`has ${segments.slice(0, index + 1).join(".")} as a value that is not an object`);
    }
  }
  if (value === undefined) delete current[last];
  else Object.defineProperty(current, last, { value, enumerable: true, writable: true, configurable: true });
  const indent = jsonIndent(text);
  const printed = JSON.stringify(root, null, indent);
  return text.trim() === "" || text.endsWith("\n") ? `${printed}\n` : printed;
}

/** The file's indentation: its first indented line's whitespace; none for a one-line file; else 2 spaces. */
function jsonIndent(text: string): string | number {
  const match = /\n([ \t]+)\S/.exec(text);
  if (match?.[1] !== undefined) return match[1];
  return text.trim() !== "" && !text.trim().includes("\n") ? 0 : 2;
}

// ---- INI --------------------------------------------------------------------------------------

interface IniLine {
  readonly section: string;
  readonly name?: string;
  readonly value?: string;
  readonly header?: boolean;
}

function iniParts(key: string): { section: string; name: string } {
  const dot = key.lastIndexOf(".");
  return dot === -1 ? { section: "", name: key } : { section: key.slice(0, dot), name: key.slice(dot + 1) };
}

function parseIni(lines: readonly string[]): IniLine[] {
  let section = "";
  return lines.map((line) => {
    const trimmed = line.trim();
    if (trimmed.startsWith(";") || trimmed.startsWith("#") || trimmed === "") return { section };
    const header = /^\[(.*)\]$/.exec(trimmed);
    if (header) {
      section = (header[1] ?? "").trim();
      return { section, header: true };
    }
    const equals = line.indexOf("=");
    if (equals === -1) return { section };
    return { section, name: line.slice(0, equals).trim(), value: line.slice(equals + 1).trim() };
  });
}

function readIniKey(text: string, key: string): Lookup {
  const { section, name } = iniParts(key);
  const parsed = parseIni(text.replace(/\r\n/g, "\n").split("\n"));
  const line = parsed.find((entry) => entry.section === section && entry.name === name);
  return line === undefined ? { found: false } : { found: true, value: line.value ?? "" };
}

function writeIniKey(text: string, key: string, value: string | undefined): string {
  const { section, name } = iniParts(key);
  const lines = text === "" ? [] : text.split("\n");
  const trailingNewline = text === "" || text.endsWith("\n");
  if (trailingNewline && lines[lines.length - 1] === "") lines.pop();
  const parsed = parseIni(lines);
  const at = parsed.findIndex((entry) => entry.section === section && entry.name === name);
  if (at !== -1) {
    const line = lines[at] ?? "";
    if (value === undefined) lines.splice(at, 1);
    else {
      const equals = line.indexOf("=");
      const spaced = /^=[ \t]/.test(line.slice(equals));
      lines[at] = `${line.slice(0, equals + 1)}${spaced ? " " : ""}${value}`;
    }
  } else if (value !== undefined) {
    const spaced = parsed.some((entry, index) => entry.name !== undefined && /\s=\s/.test(lines[index] ?? ""));
    const newLine = spaced ? `${name} = ${value}` : `${name}=${value}`;
    const inSection = parsed.flatMap((entry, index) => (entry.section === section ? [index] : []));
    const hasSection = section === "" || parsed.some((entry) => entry.header && entry.section === section);
    if (hasSection) {
      // After the section's last non-blank line (its header or a key), before the blank lines that part sections.
      const candidates = inSection.filter((index) => (lines[index] ?? "").trim() !== "");
      const after = candidates.length > 0 ? (candidates[candidates.length - 1] ?? -1) : -1;
      if (section === "" && after === -1) lines.splice(0, 0, newLine);
      else lines.splice(after + 1, 0, newLine);
    } else {
      if (lines.length > 0 && (lines[lines.length - 1] ?? "").trim() !== "") lines.push("");
      lines.push(`[${section}]`, newLine);
    }
  }
  const joined = lines.join("\n");
  return trailingNewline && lines.length > 0 ? `${joined}\n` : joined;
}

// ---- .env -------------------------------------------------------------------------------------

const ENV_LINE = /^(\s*)(export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/;

function envValue(raw: string): string {
  const text = raw.trimStart();
  if (text.startsWith('"')) {
    let value = "";
    for (let index = 1; index < text.length; index++) {
      const char = text[index];
      if (char === '"') return value;
      if (char === "\\" && index + 1 < text.length) {
        const next = text[++index];
        value += next === "n" ? "\n" : next;
      } else value += char;
    }
    return value;
  }
  if (text.startsWith("'")) {
    const end = text.indexOf("'", 1);
    return end === -1 ? text.slice(1) : text.slice(1, end);
  }
  return text.replace(/\s+#.*$/, "").trim();
}

function envQuote(value: string): string {
  if (/^[A-Za-z0-9_./:@%+,=-]*$/.test(value)) return value;
  if (!value.includes("'")) return `'${value}'`;
  return `"${value.replace(/[\\"$`]/g, "\\$&")}"`;
}

function readEnvKey(text: string, key: string): Lookup {
  let found: Lookup = { found: false };
  for (const line of text.replace(/\r\n/g, "\n").split("\n")) {
    const match = ENV_LINE.exec(line);
    if (match && match[3] === key) found = { found: true, value: envValue(match[4] ?? "") }; // the last one wins
  }
  return found;
}

function writeEnvKey(text: string, key: string, value: string | undefined): string {
  const lines = text === "" ? [] : text.split("\n");
  const trailingNewline = text === "" || text.endsWith("\n");
  if (trailingNewline && lines[lines.length - 1] === "") lines.pop();
  const matching = lines.flatMap((line, index) => (ENV_LINE.exec(line)?.[3] === key ? [index] : []));
  if (value === undefined) {
    for (const index of matching.reverse()) lines.splice(index, 1);
  } else {
    const last = matching[matching.length - 1];
    if (last === undefined) lines.push(`${key}=${envQuote(value)}`);
    else {
      const match = ENV_LINE.exec(lines[last] ?? "");
      lines[last] = `${match?.[1] ?? ""}${match?.[2] ?? ""}${key}=${envQuote(value)}`;
    }
  }
  const joined = lines.join("\n");
  return trailingNewline && lines.length > 0 ? `${joined}\n` : joined;
}
