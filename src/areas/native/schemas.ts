import { z } from "zod";

/**
 * Result shapes of the native methods: BuildMaster's table columns in their PascalCase names
 * (docs/compat.md 7.5, 7.7; the Jenkins BuildMaster plugin's captured responses). Values we do not
 * keep (application group ids, modification records, deployables) are left out rather than sent
 * as null: Gson and .NET readers treat a missing member as its default, a null may throw.
 * Indicators are JSON booleans, as in the captured responses.
 */

const id = z.number().int();
const text = z.string();
const date = z.string().describe("ISO 8601, UTC");

const applicationExtendedSchema = z
  .object({
    Application_Id: id,
    Application_Name: text,
    Application_Description: text.optional(),
    ApplicationGroup_Name: text.optional(),
    BuildNumber_Scheme_Name: z.enum(["Sequential", "DateTimeBased", "Unique"]),
    Active_Releases_Count: z.number().int(),
    Active_Indicator: z.boolean(),
    ShowDeployables_Indicator: z.boolean(),
  })
  .describe("Applications_Extended row");

const releaseExtendedSchema = z
  .object({
    Release_Id: id,
    Application_Id: id,
    Application_Name: text,
    Release_Number: text,
    Release_Name: text,
    Release_Sequence: z.number().int(),
    ReleaseStatus_Name: z.enum(["Active", "Deployed", "Canceled"]),
    Pipeline_Name: text.optional(),
    CreatedBy_User_Name: text,
    CreatedOn_Date: date,
    CancelledBy_User_Name: text.optional(),
    CancelledOn_Date: date.optional(),
    Furthest_Build_Id: id.optional(),
    Furthest_Build_Number: text.optional(),
    Latest_Build_Id: id.optional(),
    Latest_Build_Number: text.optional(),
  })
  .describe("Releases_Extended row");

/** We model no deployables: these tables are always empty, but present because clients index them. */
const noDeployables = z.array(z.never()).describe("Always empty: Wharf has no deployables");

export const applicationsResultSchema = z.array(applicationExtendedSchema);

export const applicationDetailsResultSchema = z.object({
  Applications_Extended: z.array(applicationExtendedSchema).describe("The application, or empty when unknown"),
  Deployables_Extended: noDeployables,
});

export const releaseDetailsResultSchema = z.object({
  Releases_Extended: z.array(releaseExtendedSchema).describe("The release, or empty when unknown"),
  ReleaseDeployables_Extended: noDeployables,
});

export type ApplicationExtended = z.input<typeof applicationExtendedSchema>;
export type ReleaseExtended = z.input<typeof releaseExtendedSchema>;
