import { z } from "zod";
import { queryDoc } from "../../http/query-doc.js";
import type { DeploymentRecord } from "./service.js";
import { errorText } from "../../http/errors.js";

/**
 * Request and response shapes of area C. The posted record is not validated by a schema: its
 * field names are matched case-insensitively and it may arrive in three encodings
 * (request-body.ts, fields.ts). The seed leaves the 200 body open; Wharf answers the stored
 * record, camelCase, with its id.
 */

export { errorText };

/** Documentation only (z.unknown validates nothing): the fields are read by fields.ts. */
export const postedRecordDoc = z
  .unknown()
  .describe(
    "Package deployment record (docs/seed-api.md C) as JSON, as a form, or as form pairs without a Content-Type; " +
      "field names in any case. Required: Application, Description, Target, FeedName, PackageName, Version. " +
      "Optional: GroupName (absent or empty: no group), UserName (default: the caller), Url (http or https), " +
      "Date (ISO 8601, UTC when no zone is given; default: now).",
  );

export const deploymentRecordSchema = z
  .object({
    id: z.number().int(),
    feedName: z.string().describe("The feed's canonical name"),
    groupName: z.string().describe("Empty for no group"),
    packageName: z.string(),
    version: z.string(),
    application: z.string(),
    description: z.string(),
    target: z.string(),
    userName: z.string().nullable().describe("null when neither the record nor the caller names anyone"),
    url: z.string().nullable(),
    date: z.string().describe("When it was deployed: yyyy-MM-ddTHH:mm:ss.fffZ"),
  })
  .describe("A stored package deployment record");
export type DeploymentRecordJson = z.infer<typeof deploymentRecordSchema>;

/** Default and cap of one listing. */
export const MAX_LIST_COUNT = 1_000;

export const listQueryDoc = queryDoc({
  feed: "Feed name (required)",
  name: "Package name (required)",
  group: "Group; absent or empty: no group",
  version: "Exact version; absent: every version",
  count: `Maximum records, default and cap ${MAX_LIST_COUNT}`,
});

export function recordJson(record: DeploymentRecord): DeploymentRecordJson {
  return { ...record, userName: record.userName ?? null, url: record.url ?? null };
}
