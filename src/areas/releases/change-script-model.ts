/**
 * Database change scripts (migration 0012; issue 14 section 1): SQL kept per release of an
 * application, with who created and last changed it. BuildMaster runs them against a database at
 * deployment; Wharf keeps and serves them (native methods DatabaseChangeScripts_*), it runs none.
 */
export interface ChangeScript {
  readonly id: number;
  readonly applicationId: number;
  readonly applicationName: string;
  readonly releaseId: number;
  readonly releaseNumber: string;
  readonly releaseName: string;
  readonly name: string;
  readonly text: string;
  readonly active: boolean;
  /** Stays with the script through renames and moves (BuildMaster's Script_Guid). */
  readonly guid: string;
  readonly createdBy: string;
  readonly createdOn: string;
  readonly modifiedBy: string;
  readonly modifiedOn: string;
}

/** What create-or-update is given: the script is found by `scriptId`, else by name in the release. */
export interface ChangeScriptDraft {
  readonly applicationId: number;
  readonly releaseNumber: string;
  /** An existing script of the application to change (it may be renamed or moved to `releaseNumber`). */
  readonly scriptId?: number;
  readonly name: string;
  readonly text: string;
  /** Absent: true for a new script, unchanged for an existing one. */
  readonly active?: boolean;
}

export interface ChangeScriptFilter {
  readonly applicationId: number;
  readonly releaseNumber?: string;
  readonly includeInactive: boolean;
  readonly limit?: number;
}

/** Names show in lists and logs: one line, and short enough to read. */
export const MAX_SCRIPT_NAME_LENGTH = 200;
/**
 * A script is SQL text, not a file: 1 Mi characters bounds the database row whatever the
 * transport's own body limit (JSON's is 1 MiB already; SOAP's may differ).
 */
export const MAX_SCRIPT_TEXT_LENGTH = 1024 * 1024;
