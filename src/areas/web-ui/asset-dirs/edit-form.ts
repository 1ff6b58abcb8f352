import type { AssetItem } from "../../endpoints/repository.js";
import type { MetadataUpdateInput } from "../../endpoints/service.js";

/**
 * The metadata form of an item (?edit) and the MetadataUpdate it posts (docs/seed-api.md area F):
 * the service parses and checks every value as it does for the API (asset-metadata.ts,
 * cache-header.ts); this only turns form fields into that JSON shape and back.
 */
export interface EditForm {
  readonly type: string;
  readonly cacheType: string;
  readonly cacheValue: string;
  readonly entries: ReadonlyArray<{ readonly name: string; readonly value: string; readonly header: boolean }>;
}

export const CACHE_TYPES = [
  { value: "Inherit", label: "Inherit from the folder" },
  { value: "NoCache", label: "No cache" },
  { value: "TTL", label: "Time to live (seconds)" },
  { value: "Custom", label: "Custom Cache-Control text" },
];

/** Blank rows the form offers for new entries. */
const NEW_ROWS = 3;
/** Rows read back: the service refuses more than 100 entries itself. */
const MAX_ROWS = 200;

export function editForm(item: AssetItem): EditForm {
  const setting = item.cacheHeader;
  return {
    type: item.contentType ?? "",
    cacheType: setting.type,
    cacheValue: "value" in setting ? String(setting.value) : "",
    entries: withBlankRows(
      Object.entries(item.userMetadata).map(([name, entry]) => ({ name, value: entry.value, header: entry.header })),
    ),
  };
}

const withBlankRows = (entries: EditForm["entries"]) => [
  ...entries,
  ...Array.from({ length: NEW_ROWS }, () => ({ name: "", value: "", header: false })),
];

/** The posted fields, as the form shows them again when the service refuses them. */
export function postedForm(body: unknown): EditForm {
  const fields = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const text = (name: string) => {
    const value = fields[name];
    const first = Array.isArray(value) ? value[0] : value;
    return typeof first === "string" ? first : "";
  };
  const entries = [];
  for (let i = 0; i < MAX_ROWS && `name.${i}` in fields; i++) {
    entries.push({ name: text(`name.${i}`).trim(), value: text(`value.${i}`), header: text(`header.${i}`) === "on" });
  }
  return {
    type: text("type").trim(),
    cacheType: text("cacheType"),
    cacheValue: text("cacheValue").trim(),
    entries: withBlankRows(entries.filter((entry) => entry.name !== "")),
  };
}

/**
 * The update: the entries listed replace the item's (`replace` mode: a cleared row removes its
 * entry), the cache setting as chosen, and the type when one is given (a folder has none).
 */
export function metadataUpdate(form: EditForm, isFolder: boolean): MetadataUpdateInput {
  const userMetadata = Object.fromEntries(
    form.entries
      .filter((entry) => entry.name !== "")
      .map((entry) => [entry.name, entry.header ? { value: entry.value, includeInResponseHeader: true } : entry.value]),
  );
  const cacheHeader =
    form.cacheType === "TTL" || form.cacheType === "Custom"
      ? { type: form.cacheType, value: form.cacheValue }
      : { type: form.cacheType };
  return {
    ...(!isFolder && form.type !== "" ? { type: form.type } : {}),
    userMetadata,
    userMetadataUpdateMode: "replace",
    cacheHeader,
  };
}
