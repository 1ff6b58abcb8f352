import { z } from "zod";
import { DomainError } from "../../domain/errors.js";
import type { ConfigurationRuntime, ConfigurationServices } from "../configuration/index.js";
import { defineNativeMethod, type NativeMethod } from "./registry.js";

/**
 * The Otter methods of the native API (docs/compat.md 8.x; issue 14 section 1): servers, roles and
 * configuration status, read through the configuration area's infrastructure repository, roles
 * service and status service. Environments are one table with BuildMaster's, so
 * `Environments_GetEnvironments` is declared once, in methods-buildmaster.ts. Nothing secret is
 * ever shown: no agent keys or their hashes, no variables (sensitive ones are sealed), no
 * credentials; a server says which kind of connection it has, not how it authenticates.
 */

/** What the Otter methods read (app.ts passes the configuration area's services and runtime). */
export interface NativeConfigurationServices {
  readonly infrastructure: ConfigurationServices["infrastructure"];
  readonly roles: Pick<ConfigurationServices["roles"], "list">;
  readonly status: Pick<ConfigurationRuntime["status"], "statusOf" | "allStatuses" | "itemsOf">;
}

const id = z.number().int();
const text = z.string();

const serverRowSchema = z
  .object({
    Server_Id: id,
    Server_Name: text,
    ServerType_Code: z.enum(["local", "agent", "ssh"]).describe("How Wharf reaches the server"),
    HostName_Text: text.optional(),
    Port_Number: z.number().int().optional(),
    Active_Indicator: z.boolean(),
    DriftMode_Code: z.enum(["none", "reportOnly", "automaticallyRemediate"]),
    AgentLastSeen_Date: text.optional().describe("agent servers: last poll, ISO 8601 UTC"),
  })
  .describe("Servers row");

const entityRowSchema = (prefix: "ServerRole" | "Environment") =>
  z.object({ [`${prefix}_Id`]: id, [`${prefix}_Name`]: text }).describe(`${prefix}s row`);

const roleRowSchema = z
  .object({
    ServerRole_Id: id,
    ServerRole_Name: text,
    ServerRole_Description: text.optional(),
    Server_Count: z.number().int().describe("Servers that list the role directly"),
  })
  .describe("ServerRoles row");

const statusRowSchema = z
  .object({
    Entity_Type: z.enum(["server", "role", "environment"]),
    Entity_Name: text,
    Status_Code: z.enum(["disabled", "executing", "error", "pendingRemediation", "drifted", "current", "unknown"]),
    Error_Text: text.optional(),
    Collection_Date: text.optional().describe("Of the latest check, yyyy-MM-ddTHH:mm:ss UTC"),
    LatestCollection_Id: id.optional(),
    Remediation_Date: text.optional(),
    Remediation_Id: id.optional(),
  })
  .describe("Configuration status row (docs/compat.md 8.1)");

const itemRowSchema = z
  .object({
    Item_Type: text.describe("file, directory, package, ..."),
    Item_Key: text,
    Status_Code: text.describe("current, drifted or unknown"),
    Collection_Date: text.describe("yyyy-MM-ddTHH:mm:ss UTC"),
    Collection_Id: id,
    CollectionRole_Name: text.optional().describe("The role the item comes from; absent for the server's own"),
    Remediation_Date: text.optional(),
    Remediation_Id: id.optional(),
    Error_Text: text.optional().describe("Why an item is unknown"),
  })
  .describe("Configuration item row (docs/compat.md 8.1); what differs is in /api/configuration/server/<name>");

type ServerRow = z.input<typeof serverRowSchema>;
type Infrastructure = NativeConfigurationServices["infrastructure"];

function serverRow(server: Awaited<ReturnType<Infrastructure["listServers"]>>[number]): ServerRow {
  return {
    Server_Id: server.id,
    Server_Name: server.name,
    ServerType_Code: server.type,
    ...(server.hostName !== undefined && { HostName_Text: server.hostName }),
    ...(server.port !== undefined && { Port_Number: server.port }),
    Active_Indicator: server.active,
    DriftMode_Code: server.driftMode,
    ...(server.agentLastSeenAt !== undefined && { AgentLastSeen_Date: server.agentLastSeenAt }),
  };
}

const getServers = defineNativeMethod({
  name: "Servers_GetServers",
  summary: "Every server by name (no keys, variables or credentials).",
  parameters: [
    {
      name: "IncludeInactive_Indicator",
      type: "indicator",
      required: false,
      description: "N leaves out inactive servers (default Y)",
    },
  ],
  attribute: "Infrastructure_View",
  result: z.array(serverRowSchema),
  async run(args, { services: { configuration } }) {
    return (await configuration.infrastructure.listServers())
      .filter((server) => server.active || args.IncludeInactive_Indicator !== false)
      .map(serverRow);
  },
});

const getServer = defineNativeMethod({
  name: "Servers_GetServer",
  summary: "One server (`Servers_Extended[0]`) with its roles and environments; empty tables when unknown.",
  parameters: [
    { name: "Server_Id", type: "integer", required: false, description: "Id of the server (or give Server_Name)" },
    { name: "Server_Name", type: "string", required: false, description: "Name of the server (or give Server_Id)" },
  ],
  attribute: "Infrastructure_View",
  result: z.object({
    Servers_Extended: z.array(serverRowSchema).describe("The server, or empty when unknown"),
    ServerRoles: z.array(entityRowSchema("ServerRole")).describe("Its roles, in its order"),
    Environments: z.array(entityRowSchema("Environment")),
  }),
  async run(args, { services: { configuration } }) {
    const { infrastructure } = configuration;
    if (args.Server_Id === undefined && args.Server_Name === undefined) {
      throw new DomainError("invalid", "MISSING_PARAMETER", "The parameter 'Server_Id' or 'Server_Name' is required.");
    }
    const byName = args.Server_Name === undefined ? undefined : await infrastructure.findServer(args.Server_Name);
    const serverId = args.Server_Id ?? byName?.id;
    const server = serverId === undefined ? undefined : await infrastructure.getServer(serverId);
    if (!server || (args.Server_Name !== undefined && byName?.id !== server.id)) {
      return { Servers_Extended: [], ServerRoles: [], Environments: [] };
    }
    return {
      Servers_Extended: [serverRow(server)],
      ServerRoles: (await infrastructure.serverRoles(server.id)).map((r) => ({
        ServerRole_Id: r.id,
        ServerRole_Name: r.name,
      })),
      Environments: (await infrastructure.serverEnvironments(server.id)).map((e) => ({
        Environment_Id: e.id,
        Environment_Name: e.name,
      })),
    };
  },
});

const getServerRoles = defineNativeMethod({
  name: "ServerRoles_GetServerRoles",
  summary: "Every server role by name, with how many servers list it.",
  parameters: [],
  attribute: "Infrastructure_View",
  result: z.array(roleRowSchema),
  async run(_args, { services: { configuration } }) {
    const { infrastructure, roles } = configuration;
    const rows = [];
    for (const role of await roles.list()) {
      const ref = await infrastructure.findRole(role.name);
      if (!ref) continue; // deleted between the two reads
      rows.push({
        ServerRole_Id: ref.id,
        ServerRole_Name: ref.name,
        ...(role.description !== undefined && { ServerRole_Description: role.description }),
        Server_Count: (await infrastructure.roleServers(ref.id)).length,
      });
    }
    return rows;
  },
});

const getConfigurationStatus = defineNativeMethod({
  name: "ServerConfiguration_GetStatus",
  summary:
    "Configuration status (docs/compat.md 8.1) of one server, role or environment, or of all of them when none is " +
    "named; an unknown name gives an empty table.",
  parameters: [
    { name: "Server_Name", type: "string", required: false, description: "A server" },
    { name: "ServerRole_Name", type: "string", required: false, description: "A role", aliases: ["Role_Name"] },
    { name: "Environment_Name", type: "string", required: false, description: "An environment" },
  ],
  attribute: "Infrastructure_View",
  result: z.array(statusRowSchema),
  async run(args, { services: { configuration } }) {
    const named = (
      [
        ["server", args.Server_Name],
        ["role", args.ServerRole_Name],
        ["environment", args.Environment_Name],
      ] as const
    ).filter((entry): entry is readonly ["server" | "role" | "environment", string] => entry[1] !== undefined);
    if (named.length > 1) {
      throw new DomainError(
        "invalid",
        "TOO_MANY_ENTITIES",
        "Give at most one of 'Server_Name', 'ServerRole_Name' and 'Environment_Name'.",
      );
    }
    const [entity] = named;
    let statuses;
    if (entity === undefined) statuses = await configuration.status.allStatuses();
    else {
      try {
        statuses = [await configuration.status.statusOf(entity[0], entity[1])];
      } catch (error) {
        if (error instanceof DomainError && error.kind === "not_found") return [];
        throw error;
      }
    }
    return statuses.map((s) => ({
      Entity_Type: s.type,
      Entity_Name: s.name,
      Status_Code: s.status,
      ...(s.errorText !== undefined && { Error_Text: s.errorText }),
      ...(s.collectionDate !== null && { Collection_Date: s.collectionDate }),
      ...(s.latestCollectionId !== undefined &&
        s.latestCollectionId !== null && {
          LatestCollection_Id: s.latestCollectionId,
        }),
      ...(s.remediationDate !== undefined && { Remediation_Date: s.remediationDate }),
      ...(s.remediationId !== undefined && { Remediation_Id: s.remediationId }),
    }));
  },
});

const getConfigurationItems = defineNativeMethod({
  name: "ServerConfiguration_GetItems",
  summary:
    "The configuration items of a server's last check, with their status; empty for an unknown server or one " +
    "never checked.",
  parameters: [{ name: "Server_Name", type: "string", required: true, description: "The server" }],
  attribute: "Infrastructure_View",
  result: z.array(itemRowSchema),
  async run(args, { services: { configuration } }) {
    let items;
    try {
      items = await configuration.status.itemsOf(args.Server_Name);
    } catch (error) {
      if (error instanceof DomainError && error.kind === "not_found") return [];
      throw error;
    }
    return items.map((item) => ({
      Item_Type: item.type,
      Item_Key: item.key,
      Status_Code: item.status,
      Collection_Date: item.collectionDate,
      Collection_Id: item.collectionId,
      ...(item.collectionRole !== null && { CollectionRole_Name: item.collectionRole }),
      ...(item.remediationDate !== undefined && { Remediation_Date: item.remediationDate }),
      ...(item.remediationId !== undefined && { Remediation_Id: item.remediationId }),
      ...(item.errorText !== undefined && { Error_Text: item.errorText }),
    }));
  },
});

/** The Otter methods, in reference-page order (Environments_GetEnvironments is BuildMaster's, shared). */
export const OTTER_METHODS: readonly NativeMethod[] = [
  getServers,
  getServer,
  getServerRoles,
  getConfigurationStatus,
  getConfigurationItems,
];
