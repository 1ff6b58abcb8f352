import type { AppliedChange, DesiredItem, ItemResult, LogLevel } from "../../drift/model.js";

/**
 * How the configuration area reaches a server (issue 13 section 3). The checker and the
 * remediation job call a transport by the server's type; `local` and `ssh` open an Executor here
 * and run the engine (src/drift/engine.ts) in this process, `agent` hands the same items to the
 * server's `wharf agent`, which runs the same engine on its machine and reports back.
 */
export interface ServerTarget {
  readonly id: number;
  readonly name: string;
  readonly type: "local" | "agent" | "ssh";
  /** local: absolute directory on the Wharf host; ssh: absolute directory on the target; agent: unused. */
  readonly rootPath: string | undefined;
  readonly hostName: string | undefined;
  readonly port: number | undefined;
  readonly credentialsId: number | undefined;
  /** ssh: the pinned host key (SHA-256, base64 as OpenSSH prints it without the `SHA256:` prefix). */
  readonly hostKeySha256: string | undefined;
}

export interface TransportRun {
  /** Merged variables for templates, names lowercased (server over roles over environments over global). */
  readonly variables: ReadonlyMap<string, string>;
  readonly signal: AbortSignal;
  log(level: LogLevel, message: string): void;
}

export interface RemediationOutcome {
  readonly changes: readonly AppliedChange[];
  /** The items as collected again after the changes (the closing check). */
  readonly results: readonly ItemResult[];
}

export interface ServerTransport {
  /** Collects and compares every item; rejects (with a message for errorText) when the server cannot be reached at all. */
  check(server: ServerTarget, items: readonly DesiredItem[], run: TransportRun): Promise<ItemResult[]>;
  /** Applies the given (drifted) items, or with `simulate` only reports what it would change. */
  remediate(
    server: ServerTarget,
    items: readonly DesiredItem[],
    run: TransportRun & { readonly simulate: boolean },
  ): Promise<RemediationOutcome>;
}
