import { type Clock, formatProGetDate } from "../../domain/clock.js";
import { type Principal, principalName } from "../../domain/principal.js";
import { actorOf } from "../../lifecycle/events.js";
import type { Feed, FeedService } from "../management/index.js";
import type { DeploymentDetails, DeploymentInput } from "./fields.js";
import type { DeploymentFilter, PackageDeploymentRepository, StoredDeployment } from "./repository.js";

/**
 * Package deployment records (docs/seed-api.md area C; docs/compat.md 6.2, 2.4): that a package version was
 * deployed somewhere, by whom, with which tool. The package is named as the caller names it and
 * need not be stored in the feed (it may come through a connector, or the feed may be of any
 * type); only the feed must exist. Throws DomainError; knows no HTTP.
 */
export interface PackageDeploymentService {
  /** A posted record: 404 for an unknown feed. UserName defaults to the caller, Date to now. */
  record(input: DeploymentInput, caller: Principal): Promise<DeploymentRecord>;
  /** A record announced by a download of a version the feed holds (X-ProGet-Deployment-* headers). */
  recordDownload(version: DownloadedVersion, details: DeploymentDetails, caller: Principal): Promise<void>;
  /** Records of a package, or of one version of it, newest deployment first; 404 for an unknown feed. */
  list(query: DeploymentQuery): Promise<DeploymentRecord[]>;
  /** Records per version of a feed (or of one package), keyed by deploymentCountKey of the lowercased names. */
  countsByVersion: PackageDeploymentRepository["countsByVersion"];
}

/** A stored record as the API shows it: named by feed, dated by deployment. */
export type DeploymentRecord = Omit<StoredDeployment, "feedId" | "deployedAt" | "recordedAt"> & {
  /** The feed's canonical name. */
  readonly feedName: string;
  /** yyyy-MM-ddTHH:mm:ss.fffZ */
  readonly date: string;
};

/** A package version as named: `group` "" for no group. */
interface PackageVersion {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

/** The version a download served, as the universal feed resolved it. */
export interface DownloadedVersion extends PackageVersion {
  readonly feedId: number;
}

/** A DeploymentFilter naming the feed as the caller does. */
export type DeploymentQuery = Omit<DeploymentFilter, "feedId"> & { readonly feedName: string };

export interface PackageDeploymentServiceDeps {
  readonly repository: PackageDeploymentRepository;
  readonly feeds: FeedService;
  readonly clock: Clock;
}

export function createPackageDeploymentServiceWith(deps: PackageDeploymentServiceDeps): PackageDeploymentService {
  const { repository, feeds, clock } = deps;

  function store(feedId: number, pkg: PackageVersion, details: DeploymentDetails, caller: Principal) {
    const now = clock.now();
    const record = {
      feedId,
      groupName: pkg.group,
      packageName: pkg.name,
      version: pkg.version,
      application: details.application,
      description: details.description,
      target: details.target,
      userName: details.userName ?? principalName(caller),
      url: details.url,
      deployedAt: formatProGetDate(details.date ?? now),
      recordedAt: formatProGetDate(now),
    };
    return repository.insert(record, actorOf(caller));
  }

  return {
    countsByVersion: (feedId, only) => repository.countsByVersion(feedId, only),

    async record(input, caller) {
      const feed = await feeds.getFeed(input.feedName);
      const pkg = { group: input.groupName, name: input.packageName, version: input.version };
      return present(feed, await store(feed.id, pkg, input.details, caller));
    },

    async recordDownload(version, details, caller) {
      await store(version.feedId, version, details, caller);
    },

    async list(query) {
      const feed = await feeds.getFeed(query.feedName);
      const rows = await repository.list({ ...query, feedId: feed.id });
      return rows.map((row) => present(feed, row));
    },
  };
}

function present(feed: Feed, row: StoredDeployment): DeploymentRecord {
  const { feedId: _feedId, recordedAt: _recordedAt, deployedAt, ...shown } = row;
  return { ...shown, feedName: feed.name, date: deployedAt };
}
