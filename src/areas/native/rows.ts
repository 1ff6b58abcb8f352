import type { Release } from "../releases/index.js";
import type { Application } from "../releases/model.js";
import { SCHEME_NAMES } from "../releases/schemas.js";
import type { ApplicationExtended, ReleaseExtended } from "./schemas.js";

/** Domain records -> native rows (schemas.ts); absent values stay absent. */

const RELEASE_STATUS_NAMES = { active: "Active", deployed: "Deployed", canceled: "Canceled" } as const;

export function applicationRow(application: Application, activeReleases: number): ApplicationExtended {
  return {
    Application_Id: application.id,
    Application_Name: application.name,
    ...(application.description !== undefined && { Application_Description: application.description }),
    ...(application.groupName !== undefined && { ApplicationGroup_Name: application.groupName }),
    BuildNumber_Scheme_Name: SCHEME_NAMES[application.buildNumberScheme],
    Active_Releases_Count: activeReleases,
    Active_Indicator: application.active,
    ShowDeployables_Indicator: false,
  };
}

export function releaseRow(release: Release): ReleaseExtended {
  return {
    Release_Id: release.id,
    Application_Id: release.applicationId,
    Application_Name: release.applicationName,
    Release_Number: release.number,
    Release_Name: release.name,
    Release_Sequence: release.sequence,
    ReleaseStatus_Name: RELEASE_STATUS_NAMES[release.status],
    ...(release.pipelineName !== undefined && { Pipeline_Name: release.pipelineName }),
    CreatedBy_User_Name: release.createdBy,
    CreatedOn_Date: release.createdOn,
    ...(release.canceledBy !== undefined && { CancelledBy_User_Name: release.canceledBy }),
    ...(release.canceledOn !== undefined && { CancelledOn_Date: release.canceledOn }),
    ...(release.furthestBuild && {
      Furthest_Build_Id: release.furthestBuild.id,
      Furthest_Build_Number: release.furthestBuild.number,
    }),
    ...(release.latestBuild && {
      Latest_Build_Id: release.latestBuild.id,
      Latest_Build_Number: release.latestBuild.number,
    }),
  };
}
