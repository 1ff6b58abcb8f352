/** Parameters several native methods take, spelled as BuildMaster does. */

export const applicationId = {
  name: "Application_Id",
  type: "integer",
  required: true,
  description: "Id of the application",
} as const;
