import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { type PackageEvent, packageEventWriter } from "../../lifecycle/events.js";

/**
 * SQL for `package_deployments` (migrations/0007). Group, name and version are kept as given and
 * matched through their lowercased `*_key` columns; dates are yyyy-MM-ddTHH:mm:ss.fffZ text, so
 * that ordering by text is ordering by time.
 */

/** A record to store; `groupName` "" for no group. */
export interface NewDeployment {
  readonly feedId: number;
  readonly groupName: string;
  readonly packageName: string;
  readonly version: string;
  readonly application: string;
  readonly description: string;
  readonly target: string;
  readonly userName: string | undefined;
  readonly url: string | undefined;
  readonly deployedAt: string;
  readonly recordedAt: string;
}

export interface StoredDeployment extends NewDeployment {
  readonly id: number;
}

/** One package's records (`groupName` "" for no group); `version` absent: every version. */
export type DeploymentFilter = Pick<NewDeployment, "feedId" | "groupName" | "packageName"> & {
  readonly version?: string | undefined;
  readonly limit: number;
};

export interface PackageDeploymentRepository {
  /** Stores one record, and its package.deployed event by `actor`; returns it with its id. */
  insert(record: NewDeployment, actor: string): Promise<StoredDeployment>;
  /** Records of one package (or one version of it), newest deployment first. */
  list(filter: DeploymentFilter): Promise<StoredDeployment[]>;
  /** How many records each version has, by deploymentCountKey; optionally of one group and name only. */
  countsByVersion(feedId: number, only?: { groupKey: string; nameKey: string }): Promise<Map<string, number>>;
}

/** The key countsByVersion uses: lowercased group ("" for none), name and version. */
export const deploymentCountKey = (groupKey: string, nameKey: string, versionKey: string) =>
  `${groupKey}\0${nameKey}\0${versionKey}`;

/** A row of package_deployments as the reads select it (both databases). */
export interface DeploymentRow {
  readonly id: number;
  readonly feed_id: number;
  readonly group_name: string;
  readonly name: string;
  readonly version: string;
  readonly application: string;
  readonly description: string;
  readonly target: string;
  readonly user_name: string | null;
  readonly url: string | null;
  readonly deployed_at: string;
  readonly recorded_at: string;
}

export const DEPLOYMENT_COLUMNS = `id, feed_id, group_name, name, version, application, description, target, user_name, url,
  deployed_at, recorded_at`;

export function createPackageDeploymentRepository(db: Db): PackageDeploymentRepository {
  const insert = db.prepare<Record<string, string | number | null>, { id: number }>(
    `INSERT INTO package_deployments (feed_id, group_name, name, version, group_key, name_key, version_key,
       application, description, target, user_name, url, deployed_at, recorded_at)
     VALUES (@feedId, @groupName, @packageName, @version, @groupKey, @nameKey, @versionKey,
       @application, @description, @target, @userName, @url, @deployedAt, @recordedAt)
     RETURNING id`,
  );
  const ofPackage = db.prepare<[number, string, string, number], DeploymentRow>(
    `SELECT ${DEPLOYMENT_COLUMNS} FROM package_deployments WHERE feed_id = ? AND group_key = ? AND name_key = ?
     ORDER BY deployed_at DESC, id DESC LIMIT ?`,
  );
  const ofVersion = db.prepare<[number, string, string, string, number], DeploymentRow>(
    `SELECT ${DEPLOYMENT_COLUMNS} FROM package_deployments WHERE feed_id = ? AND group_key = ? AND name_key = ? AND version_key = ?
     ORDER BY deployed_at DESC, id DESC LIMIT ?`,
  );
  const countAll = db.prepare<[number], { group_key: string; name_key: string; version_key: string; n: number }>(
    `SELECT group_key, name_key, version_key, count(*) AS n FROM package_deployments WHERE feed_id = ?
     GROUP BY group_key, name_key, version_key`,
  );
  const countOne = db.prepare<
    [number, string, string],
    { group_key: string; name_key: string; version_key: string; n: number }
  >(
    `SELECT group_key, name_key, version_key, count(*) AS n FROM package_deployments
     WHERE feed_id = ? AND group_key = ? AND name_key = ? GROUP BY version_key`,
  );

  const appendEvent = packageEventWriter(db);
  const insertWithEvent = db.transaction((record: NewDeployment, actor: string) => {
    const row = insert.get({
      ...record,
      groupKey: record.groupName.toLowerCase(),
      nameKey: record.packageName.toLowerCase(),
      versionKey: record.version.toLowerCase(),
      userName: record.userName ?? null,
      url: record.url ?? null,
    });
    if (!row) throw new Error("package_deployments insert returned no id");
    appendEvent(deployedEvent(record, actor));
    return { ...record, id: row.id };
  });

  return withBusyRetries(db, {
    // An ordinary (not quiet) write: cached version listings show each version's count.
    insert: async (record, actor) => insertWithEvent.immediate(record, actor),
    async countsByVersion(feedId, only) {
      const rows = only === undefined ? countAll.all(feedId) : countOne.all(feedId, only.groupKey, only.nameKey);
      return new Map(rows.map((row) => [deploymentCountKey(row.group_key, row.name_key, row.version_key), row.n]));
    },
    async list({ feedId, groupName, packageName, version, limit }) {
      const groupKey = groupName.toLowerCase();
      const nameKey = packageName.toLowerCase();
      const rows =
        version === undefined
          ? ofPackage.all(feedId, groupKey, nameKey, limit)
          : ofVersion.all(feedId, groupKey, nameKey, version.toLowerCase(), limit);
      return rows.map(fromRow);
    },
  });
}

/** The package.deployed event of a record, by `actor` (both databases). */
export function deployedEvent(record: NewDeployment, actor: string): PackageEvent {
  const { feedId, groupName: group, packageName: name, version, application, target } = record;
  return {
    type: "package.deployed",
    feedId,
    package: { group, name, version },
    actor,
    data: { application, target, deployedBy: record.userName ?? null },
    occurredAt: new Date(record.recordedAt),
  };
}

export function fromRow(row: DeploymentRow): StoredDeployment {
  return {
    id: row.id,
    feedId: row.feed_id,
    groupName: row.group_name,
    packageName: row.name,
    version: row.version,
    application: row.application,
    description: row.description,
    target: row.target,
    userName: row.user_name ?? undefined,
    url: row.url ?? undefined,
    deployedAt: row.deployed_at,
    recordedAt: row.recorded_at,
  };
}
