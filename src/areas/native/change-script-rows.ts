import { z } from "zod";
import type { ChangeScript } from "../releases/index.js";

/**
 * The DatabaseChangeScripts_Extended row of BuildMaster (column names as BuildMaster.Net's
 * DatabaseChangeScriptExtended reads them): application, release and script properties with who
 * created and last changed the script and when (ISO 8601 UTC, as CreatedOn_Date of releases).
 * Deployables do not exist in Wharf, so Deployable_Id and Deployable_Name are left out (a .NET
 * reader gets null), and so is Numeric_Release_Number, a BuildMaster sort key of its own.
 */
const date = z.string().describe("ISO 8601, UTC");

export const changeScriptRowSchema = z
  .object({
    Script_Id: z.number().int(),
    Script_Guid: z.string().describe("Stays with the script through renames and moves"),
    Application_Id: z.number().int(),
    Application_Name: z.string(),
    Release_Id: z.number().int(),
    Release_Number: z.string(),
    Release_Name: z.string(),
    Script_Name: z.string(),
    Script_Text: z.string(),
    Active_Indicator: z.boolean(),
    CreatedBy_User_Name: z.string().describe("User name, or API for a System API key"),
    CreatedOn_Date: date,
    ModifiedBy_User_Name: z.string().describe("Who saved the script last (the creator until it is changed)"),
    ModifiedOn_Date: date,
  })
  .describe("DatabaseChangeScripts_Extended row");

export type ChangeScriptRow = z.input<typeof changeScriptRowSchema>;

export const changeScriptsResultSchema = z.array(changeScriptRowSchema);
/** One script, or null for an unknown id (the stored procedure returns no row). */
export const changeScriptResultSchema = changeScriptRowSchema.nullable();
export const scriptIdResultSchema = z.number().int().describe("Script_Id of the script created or changed");

export function changeScriptRow(script: ChangeScript): ChangeScriptRow {
  return {
    Script_Id: script.id,
    Script_Guid: script.guid,
    Application_Id: script.applicationId,
    Application_Name: script.applicationName,
    Release_Id: script.releaseId,
    Release_Number: script.releaseNumber,
    Release_Name: script.releaseName,
    Script_Name: script.name,
    Script_Text: script.text,
    Active_Indicator: script.active,
    CreatedBy_User_Name: script.createdBy,
    CreatedOn_Date: script.createdOn,
    ModifiedBy_User_Name: script.modifiedBy,
    ModifiedOn_Date: script.modifiedOn,
  };
}
