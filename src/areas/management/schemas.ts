import { z } from "zod";
import { errorText } from "../../http/errors.js";

/**
 * Request and response shapes of feed management (docs/compat.md 5.1, 5.2). Input schemas check JSON
 * types only and let unknown members through (real clients send more than we know, e.g.
 * `replication`); the rules (names, patterns, references) are the service's, so that the CLI gets
 * the same checks. Output schemas are exact: the serializer strips anything not listed here.
 */

const count = z.int().min(0).max(2_147_483_647);
const text = (max: number) => z.string().max(max);
/** Lists are replaced wholesale; `null` (like omitting) keeps the current value. */
const list = (itemMax: number, countMax: number) => z.array(text(itemMax)).max(countMax).nullish();
const stringMap = z.record(text(200), text(100_000)).nullish();

export const retentionRuleInputSchema = z
  .object({
    deletePrereleaseVersions: z.boolean().nullish(),
    keepVersionsCount: count.nullish(),
    keepUsedWithinDays: count.nullish(),
    deletePackageIds: list(1000, 1000),
    keepPackageIds: list(1000, 1000),
    keepVersions: list(1000, 1000),
    deleteVersions: list(1000, 1000),
    deleteCached: z.boolean().nullish(),
    sizeTriggerKb: z.int().min(0).max(Number.MAX_SAFE_INTEGER).nullish(),
    sizeExclusive: z.boolean().nullish(),
    triggerDownloadCount: count.nullish(),
    keepConsumedWithinDays: count.nullish(),
    keepIfActivelyConsumed: z.boolean().nullish(),
    keepPackageUsageRemovedDays: count.nullish(),
    deleteOlderThanDays: count.nullish().describe("Wharf extension: only versions published more than D days ago"),
    keepDeployedWithinDays: count
      .nullish()
      .describe("Wharf extension: versions deployed within D days stay (default 30; 0: deployments do not protect)"),
    deleteLatestStable: z
      .boolean()
      .nullish()
      .describe("Wharf extension: true lets the rule delete a package's latest stable version (default false)"),
  })
  .loose();

const flag = z.boolean().nullish();
/**
 * What Wharf does not do yet is refused rather than stored and echoed (feed-unimplemented.ts); the
 * value already stored is accepted too, so that a feed read with GET can be sent back whole.
 */
const NOT_YET = "Not implemented yet";
const offFlag = flag.describe(`${NOT_YET}: only false (or the value stored)`);

export const feedInputSchema = z
  .object({
    name: text(1000).nullish().describe("Required on create; a different name on update renames the feed"),
    alternateNames: list(1000, 100),
    feedType: text(1000)
      .nullish()
      .describe(
        "Required on create: universal, romp or asset (case-insensitive; `ProGet` = universal). Other ProGet types " +
          "are refused (400): Wharf does not serve them",
      ),
    feedGroup: text(1000).nullish().describe("Wharf extension: group of feeds for keys and permissions; null removes"),
    description: text(10_000).nullish().describe("null removes"),
    active: flag.describe("Asset directories: only true (deactivating one is not implemented yet)"),
    cacheConnectors: flag,
    dropPath: text(4096).nullish().describe("Not supported: only null (or omitted) is accepted"),
    packagesPath: text(4096).nullish().describe("Not supported: only null (or omitted) is accepted"),
    packageStore: text(100_000).nullish().describe("Persisted-XML package store; null = default disk storage"),
    allowUnknownLicenses: z.boolean().nullish().describe(`${NOT_YET}: only true or null (license checks)`),
    allowedLicenses: list(200, 1000).describe(`${NOT_YET}: only [] (license filtering)`),
    blockedLicenses: list(200, 1000).describe(`${NOT_YET}: only [] (license filtering)`),
    symbolServerEnabled: offFlag,
    stripSymbols: offFlag,
    stripSource: offFlag,
    stripSignature: offFlag,
    useApiV3: offFlag,
    endpointUrl: z.unknown().optional().describe("Read-only; accepted and ignored"),
    canPublish: z.unknown().optional().describe("Read-only; accepted and ignored"),
    connectors: list(200, 100).describe("Connector names; universal feeds only"),
    vulnerabilitySources: list(200, 100).describe("No vulnerability source exists yet: only []"),
    retentionRules: z
      .array(retentionRuleInputSchema)
      .max(100)
      .nullish()
      .describe("Applied in order by retention runs (/api/retention); universal feeds only"),
    retentionSchedule: text(200)
      .nullish()
      .describe("Wharf extension: cron expression of scheduled retention runs (UTC); null or blank removes"),
    staticSite: flag.describe("Wharf extension, asset directories only: serve HTML and SVG without the sandbox CSP"),
    cacheHeader: z
      .unknown()
      .optional()
      .describe(
        "Wharf extension, asset directories only: `{type, value}` (Inherit, NoCache, TTL seconds, Custom text) " +
          "that items inherit; null or Inherit removes it (then `Cache-Control: public`)",
      ),
    packageFilters: stringMap.describe(`${NOT_YET}: only {} (name -> pattern list \`A.*, !C.*\`)`),
    packageAccessRules: stringMap.describe(`${NOT_YET}: only {} (name -> pattern list \`A.*, !C.*\`)`),
    variables: stringMap,
    variableDictionary: stringMap.describe("Same content as `variables` (pgutil's name)"),
    packageStatisticsEnabled: offFlag,
    restrictPackageStatistics: offFlag,
    deploymentRecordsEnabled: flag.describe("Turning deployment records off is not implemented yet: only true"),
    usageRecordsEnabled: offFlag,
    vulnerabilitiesEnabled: offFlag,
    licensesEnabled: offFlag,
    useWithProjects: offFlag,
    retentionRulesEnabled: flag.describe("Scheduled retention runs happen only when true"),
  })
  .loose();

export type FeedInput = z.infer<typeof feedInputSchema>;
export type RetentionRuleInput = z.infer<typeof retentionRuleInputSchema>;

export const retentionRuleSchema = z.object({
  deletePrereleaseVersions: z.boolean(),
  keepVersionsCount: z.number().optional(),
  keepUsedWithinDays: z.number().optional(),
  deletePackageIds: z.array(z.string()),
  keepPackageIds: z.array(z.string()),
  keepVersions: z.array(z.string()),
  deleteVersions: z.array(z.string()),
  deleteCached: z.boolean(),
  sizeTriggerKb: z.number().optional(),
  sizeExclusive: z.boolean(),
  triggerDownloadCount: z.number().optional(),
  keepConsumedWithinDays: z.number().optional(),
  keepIfActivelyConsumed: z.boolean(),
  keepPackageUsageRemovedDays: z.number().optional(),
  deleteOlderThanDays: z.number().optional(),
  keepDeployedWithinDays: z.number().optional(),
  deleteLatestStable: z.boolean(),
});

/** Never `null`: pgutil cannot read null into its non-nullable members (docs/compat.md 0.2). */
export const feedSchema = z.object({
  name: z.string(),
  alternateNames: z.array(z.string()),
  feedType: z
    .string()
    .describe("universal, romp or asset; a feed an older Wharf created may show a type Wharf does not serve"),
  feedGroup: z.string().optional(),
  description: z.string().optional(),
  active: z.boolean(),
  cacheConnectors: z.boolean(),
  dropPath: z.string().optional(),
  packagesPath: z.string().optional(),
  packageStore: z.string().optional(),
  allowUnknownLicenses: z.boolean().optional(),
  allowedLicenses: z.array(z.string()),
  blockedLicenses: z.array(z.string()),
  symbolServerEnabled: z.boolean(),
  stripSymbols: z.boolean(),
  stripSource: z.boolean(),
  stripSignature: z.boolean(),
  useApiV3: z.boolean(),
  endpointUrl: z.string(),
  connectors: z.array(z.string()),
  vulnerabilitySources: z.array(z.string()),
  retentionRules: z.array(retentionRuleSchema),
  packageFilters: z.record(z.string(), z.string()),
  packageAccessRules: z.record(z.string(), z.string()),
  variables: z.record(z.string(), z.string()),
  variableDictionary: z.record(z.string(), z.string()),
  canPublish: z.boolean(),
  packageStatisticsEnabled: z.boolean(),
  restrictPackageStatistics: z.boolean(),
  deploymentRecordsEnabled: z.boolean(),
  usageRecordsEnabled: z.boolean(),
  vulnerabilitiesEnabled: z.boolean(),
  licensesEnabled: z.boolean(),
  useWithProjects: z.boolean(),
  retentionRulesEnabled: z.boolean(),
  retentionSchedule: z.string().optional(),
  staticSite: z.boolean(),
  cacheHeader: z.object({ type: z.string(), value: z.union([z.number(), z.string()]).optional() }).optional(),
});
export type FeedJson = z.infer<typeof feedSchema>;

export const storageConfigSchema = z.object({
  id: z.string(),
  properties: z.record(z.string(), z.union([z.string(), z.boolean(), z.null()])),
});

export const storageConfigInputSchema = z
  .object({
    id: z.string().nullish().describe("disk, s3 or azure (only disk is supported yet)"),
    properties: z.record(z.string(), z.unknown()).nullish(),
  })
  .loose();

export const storageTypeSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  properties: z.record(
    z.string(),
    z.object({
      required: z.boolean(),
      name: z.string(),
      description: z.string(),
      type: z.string(),
      placeholder: z.string().optional(),
    }),
  ),
});

export const feedNameParams = z.object({ name: z.string().describe("Feed name or alternate name") });

/** `indent` pretty-prints (old feed-management doc); `key`/`API_Key` are credentials (docs/compat.md 0.1). */
export const managementQuery = z
  .object({
    indent: z.string().optional().describe("Present (and not `false`) to pretty-print the JSON"),
  })
  .loose();

export const storageQuery = managementQuery.extend({
  feed: z.string().optional().describe("Feed name; without it, GET lists the storage types"),
});

export { errorText };
