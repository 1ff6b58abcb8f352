import { z } from "zod";

/**
 * Request and response shapes of connectors (docs/compat.md 5.3) and connector health (docs/seed-api.md
 * area D). As for feeds, input schemas check JSON types only and let unknown members through; the
 * rules (name, URL, ranges, patterns) are the service's (merge.ts). Output schemas are exact: the
 * serializer strips anything not listed, so a password can never leak through a response.
 */

const text = (max: number) => z.string().max(max);

export const connectorInputSchema = z
  .object({
    name: text(1000).nullish().describe("Required on create (at most 100 characters: letters, digits, - . _ ~)"),
    url: text(4096).nullish().describe("Required on create: the remote feed's absolute http(s) URL"),
    feedType: text(1000)
      .nullish()
      .describe(
        "Required on create; compared case-insensitively (`ProGet` = universal). Only universal connectors " +
          "serve packages yet; connectors of other types are stored only",
      ),
    timeout: z.number().nullish().describe("Seconds, a whole number from 1 to 3600; default 30"),
    metadataCacheEnabled: z.boolean().nullish().describe("Default true"),
    metadataCacheMinutes: z.number().nullish().describe("Whole minutes from 0 to 525600; default 30"),
    metadataCacheCount: z.number().nullish().describe("Whole number from 1 to 100000; default 100"),
    username: text(1000).nullish().describe("Sent to the upstream with Basic authentication; null or '' removes"),
    password: text(10_000)
      .nullish()
      .describe("Write-only: never returned. Omitted keeps the stored one; null or '' removes it"),
    filters: z
      .array(text(1000))
      .max(1000)
      .nullish()
      .describe("Wildcard patterns of visible remote packages (`*`), `!` blocks; replaced wholesale"),
    mergeWithLocalPackages: z
      .boolean()
      .nullish()
      .describe(
        "Wharf extension, default false: whether this upstream's versions are merged into packages the feed " +
          "publishes itself. Off, a package with an uploaded version shadows the upstream's package of that name",
      ),
  })
  .loose();
export type ConnectorInput = z.infer<typeof connectorInputSchema>;

/** pgutil requires name, url and feedType (docs/compat.md 5.3); absent members are omitted, never null. */
export const connectorSchema = z.object({
  name: z.string(),
  url: z.string(),
  feedType: z.string(),
  timeout: z.number(),
  metadataCacheEnabled: z.boolean(),
  metadataCacheMinutes: z.number(),
  metadataCacheCount: z.number(),
  username: z.string().optional(),
  filters: z.array(z.string()),
  mergeWithLocalPackages: z.boolean(),
});
export type ConnectorJson = z.infer<typeof connectorSchema>;

/** docs/seed-api.md "Connector health object (area D)": exactly these members. */
export const connectorHealthSchema = z.object({
  id: z.number(),
  name: z.string(),
  url: z.string(),
  state: z.enum(["healthy", "error", "unknown"]),
  errorMessage: z.string().nullable(),
  lastChecked: z.string().nullable(),
});
export type ConnectorHealthJson = z.infer<typeof connectorHealthSchema>;

export const connectorNameParams = z.object({ name: z.string().describe("Connector name (case-insensitive)") });

/** A string: an id that is not a number is answered 404 like an unknown one, not 400. */
export const connectorIdParams = z.object({ id: z.string().describe("Numeric connector id") });
