import { BUILDMASTER_METHODS } from "./methods-buildmaster.js";
import { OTTER_METHODS } from "./methods-otter.js";
import { PROGET_METHODS } from "./methods-proget.js";
import { applicationRow, releaseRow } from "./rows.js";
import { CHANGE_SCRIPT_METHODS } from "./methods-change-scripts.js";
import { applicationId } from "./parameters.js";
import { defineNativeMethod, type NativeMethod } from "./registry.js";
import { applicationDetailsResultSchema, applicationsResultSchema, releaseDetailsResultSchema } from "./schemas.js";

/**
 * The application methods of the native API (docs/compat.md 7.5, 7.7; issue 6 section 4). Reads
 * behave like the stored procedures behind them: an unknown id or number gives empty tables, not
 * an error. Parameter names and spellings follow BuildMaster (BuildMasterAutomation sends
 * `CancelledReason_Text`).
 */

const releaseNumber = {
  name: "Release_Number",
  type: "string",
  required: true,
  description: "Number of the release, e.g. 1.0",
} as const;

const getApplications = defineNativeMethod({
  name: "Applications_GetApplications",
  summary: "Applications by name, each with its count of active releases.",
  parameters: [
    { name: "Application_Count", type: "integer", required: false, description: "At most this many (all if absent)" },
    {
      name: "IncludeInactive_Indicator",
      type: "indicator",
      required: false,
      description: "N leaves out inactive applications (default Y)",
    },
  ],
  attribute: "Applications_View",
  result: applicationsResultSchema,
  async run(args, { services: { releases: services } }) {
    const all = await services.catalog.listApplications();
    const shown = all
      .filter((app) => app.active || args.IncludeInactive_Indicator !== false)
      .slice(0, args.Application_Count ?? Number.POSITIVE_INFINITY);
    const active = await services.releases.countActiveReleases();
    return shown.map((app) => applicationRow(app, active.get(app.id) ?? 0));
  },
});

const getApplication = defineNativeMethod({
  name: "Applications_GetApplication",
  summary: "One application (`Applications_Extended[0]`) and its deployables (always none in Wharf).",
  parameters: [applicationId],
  attribute: "Applications_View",
  result: applicationDetailsResultSchema,
  async run(args, { services: { releases: services } }) {
    const app = await services.catalog.findApplication(args.Application_Id);
    if (!app) return { Applications_Extended: [], Deployables_Extended: [] };
    const active = await services.releases.countActiveReleases(app.id);
    return { Applications_Extended: [applicationRow(app, active.get(app.id) ?? 0)], Deployables_Extended: [] };
  },
});

const getRelease = defineNativeMethod({
  name: "Releases_GetRelease",
  summary: "One release (`Releases_Extended[0]`) and its deployables (always none in Wharf).",
  parameters: [applicationId, releaseNumber],
  attribute: "Applications_View",
  result: releaseDetailsResultSchema,
  async run(args, { services: { releases: services } }) {
    const releases = await services.releases.listReleases({
      applicationId: args.Application_Id,
      releaseNumber: args.Release_Number,
    });
    return { Releases_Extended: releases.slice(0, 1).map(releaseRow), ReleaseDeployables_Extended: [] };
  },
});

const cancelRelease = defineNativeMethod({
  name: "Releases_CancelRelease",
  summary: "Cancels a release and rejects its active builds (docs/compat.md 7.4); returns nothing.",
  parameters: [
    applicationId,
    releaseNumber,
    {
      name: "CancelledReason_Text",
      type: "string",
      required: false,
      description: "Why the release is canceled",
      aliases: ["Reason"],
    },
  ],
  attribute: "Releases_Manage",
  result: undefined,
  async run(args, { services: { releases: services }, actor }) {
    await services.releases.cancelRelease(
      { applicationId: args.Application_Id, releaseNumber: args.Release_Number },
      args.CancelledReason_Text,
      actor,
    );
  },
});

/** Every native method Wharf implements, in reference-page order. */
export const NATIVE_METHODS: readonly NativeMethod[] = [
  getApplications,
  getApplication,
  getRelease,
  cancelRelease,
  ...CHANGE_SCRIPT_METHODS,
  ...BUILDMASTER_METHODS,
  ...PROGET_METHODS,
  ...OTTER_METHODS,
];
