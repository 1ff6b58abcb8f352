import {
  changeScriptResultSchema,
  changeScriptRow,
  changeScriptsResultSchema,
  scriptIdResultSchema,
} from "./change-script-rows.js";
import { applicationId } from "./parameters.js";
import { defineNativeMethod, type NativeMethod } from "./registry.js";

/**
 * BuildMaster's database change script methods (issue 14 section 1; seed-api.md area H; names and
 * parameters as BuildMaster.Net calls them). Reads behave like the stored procedures: an unknown
 * application, release or script gives an empty list (or null for one script), never an error.
 * Writes need Releases_Manage and name what is missing. A System key needs the `native` scope.
 */

const scriptId = { name: "Script_Id", type: "integer", required: true, description: "Id of the script" } as const;

const getChangeScripts = defineNativeMethod({
  name: "DatabaseChangeScripts_GetChangeScripts",
  summary:
    "Change scripts of an application (of one release when given): newest release first, " +
    "each release's scripts in the order they were created.",
  parameters: [
    applicationId,
    { name: "Release_Number", type: "string", required: false, description: "Only this release's scripts" },
    {
      name: "IncludeInactive_Indicator",
      type: "indicator",
      required: false,
      description: "N leaves out inactive scripts (default Y)",
    },
    {
      name: "DatabaseChangeScript_Count",
      type: "integer",
      required: false,
      description: "At most this many (all if absent)",
    },
  ],
  attribute: "Applications_View",
  result: changeScriptsResultSchema,
  async run(args, { services: { releases } }) {
    const scripts = await releases.changeScripts.list({
      applicationId: args.Application_Id,
      ...(args.Release_Number !== undefined && { releaseNumber: args.Release_Number }),
      includeInactive: args.IncludeInactive_Indicator !== false,
      ...(args.DatabaseChangeScript_Count !== undefined && { limit: args.DatabaseChangeScript_Count }),
    });
    return scripts.map(changeScriptRow);
  },
});

const getChangeScript = defineNativeMethod({
  name: "DatabaseChangeScripts_GetChangeScript",
  summary: "One change script with its text, or null when there is none with that id.",
  parameters: [scriptId],
  attribute: "Applications_View",
  result: changeScriptResultSchema,
  async run(args, { services: { releases } }) {
    const script = await releases.changeScripts.find(args.Script_Id);
    return script ? changeScriptRow(script) : null;
  },
});

const createOrUpdateChangeScript = defineNativeMethod({
  name: "DatabaseChangeScripts_CreateOrUpdateChangeScript",
  summary:
    "Creates a change script in a release, or changes the one Script_Id names (else the one of that " +
    "name in the release, names compared case-insensitively); returns its Script_Id. A change " +
    "records who and when as ModifiedBy/ModifiedOn and keeps the creation's.",
  parameters: [
    applicationId,
    { name: "Release_Number", type: "string", required: true, description: "Release the script belongs to" },
    {
      name: "Script_Name",
      type: "string",
      required: true,
      description: "Unique in the release; one line, at most 200 characters",
    },
    { name: "Script_Text", type: "string", required: true, description: "The SQL of the script" },
    {
      name: "Active_Indicator",
      type: "indicator",
      required: false,
      description: "N keeps the script but leaves it out of runs (new scripts: Y; changes: unchanged)",
    },
    {
      name: "Script_Id",
      type: "integer",
      required: false,
      description: "An existing script of the application to change, rename or move; 0 or absent: by name",
    },
  ],
  attribute: "Releases_Manage",
  result: scriptIdResultSchema,
  async run(args, { services: { releases }, actor }) {
    const script = await releases.changeScripts.save(
      {
        applicationId: args.Application_Id,
        releaseNumber: args.Release_Number,
        name: args.Script_Name,
        text: args.Script_Text,
        // BuildMaster.Net sends Script_Id=0 for a new script.
        ...(args.Script_Id !== undefined && args.Script_Id > 0 && { scriptId: args.Script_Id }),
        ...(args.Active_Indicator !== undefined && { active: args.Active_Indicator }),
      },
      actor,
    );
    return script.id;
  },
});

const deleteChangeScript = defineNativeMethod({
  name: "DatabaseChangeScripts_DeleteChangeScript",
  summary: "Deletes a change script; an unknown id changes nothing. Returns nothing.",
  parameters: [scriptId],
  attribute: "Releases_Manage",
  result: undefined,
  async run(args, { services: { releases } }) {
    await releases.changeScripts.delete(args.Script_Id);
  },
});

/** The change script methods, in reference-page order. */
export const CHANGE_SCRIPT_METHODS: readonly NativeMethod[] = [
  getChangeScripts,
  getChangeScript,
  createOrUpdateChangeScript,
  deleteChangeScript,
];
