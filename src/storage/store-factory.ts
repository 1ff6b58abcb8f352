import { createHash } from "node:crypto";
import path from "node:path";
import type { StorageConfig } from "../domain/package-store.js";
import type { ProxySettings } from "../net/outbound-proxy.js";
import { createAzureBlobStore } from "./azure-blob-store.js";
import type { BlobStore } from "./blob-store.js";
import { createS3BlobStore } from "./s3-blob-store.js";

/** The key of the data directory's own store (disk). */
export const DISK_STORE_KEY = "disk";

/**
 * Where a storage configuration puts blobs, as one string: two configurations with the same key
 * write to the same objects (whatever their credentials), so they are one store to garbage
 * collection, which must never judge one feed's blobs by another's configuration. Holds no secret.
 */
export function storeKeyOf(config: StorageConfig | undefined): string {
  if (config === undefined || config.id === "disk") return DISK_STORE_KEY;
  const text = (name: string) => {
    const value = config.properties[name];
    return typeof value === "string" ? value : "";
  };
  const prefix = text("TargetPath").replace(/^\/+|\/+$/g, "");
  if (config.id === "s3") {
    const server = text("CustomServiceUrl").replace(/\/+$/, "") || `aws:${text("RegionEndpoint")}`;
    return `s3:${server}/${text("BucketName")}/${prefix}`;
  }
  return `azure:${azureAccountOf(text("ConnectionString"))}/${text("ContainerName")}/${prefix}`;
}

/** The URL an object store configuration sends its requests to, when it names one (not Amazon's or Azure's own). */
export function storeEndpointOf(config: StorageConfig): string | undefined {
  const value = config.properties[config.id === "s3" ? "CustomServiceUrl" : "ConnectionString"];
  if (typeof value !== "string") return undefined;
  return config.id === "s3" ? value : connectionStringParts(value).get("blobendpoint");
}

/** The account (its blob endpoint, else its name) a connection string names; never the key. */
function azureAccountOf(connectionString: string): string {
  const parts = connectionStringParts(connectionString);
  if (parts.get("usedevelopmentstorage") === "true") return "http://127.0.0.1:10000/devstoreaccount1";
  return (parts.get("blobendpoint") ?? "").replace(/\/+$/, "") || (parts.get("accountname") ?? "");
}

/** `Name=value;...` with lower-cased names. */
function connectionStringParts(connectionString: string): Map<string, string> {
  return new Map(
    connectionString
      .split(";")
      .map((part) => part.split("="))
      .filter((pair) => pair.length >= 2)
      .map(([name = "", ...value]) => [name.trim().toLowerCase(), value.join("=").trim()]),
  );
}

/**
 * The object store of an s3 or azure configuration whose secrets are open. Each gets its own spool
 * folder under `tempDir` (the Azure store requires one of its own).
 */
export function createObjectStore(
  config: StorageConfig,
  key: string,
  tempDir: string,
  outboundProxy?: ProxySettings,
): BlobStore {
  const spool = path.join(tempDir, `store-${createHash("sha256").update(key).digest("hex").slice(0, 16)}`);
  const text = (name: string) => {
    const value = config.properties[name];
    return typeof value === "string" ? value : undefined;
  };
  const flag = (name: string) => config.properties[name] === true;
  if (config.id === "s3") {
    const endpoint = text("CustomServiceUrl");
    const region = text("RegionEndpoint");
    const targetPath = text("TargetPath");
    return createS3BlobStore({
      bucket: text("BucketName") ?? "",
      accessKeyId: text("AccessKey") ?? "",
      secretAccessKey: text("SecretAccessKey") ?? "",
      ...(endpoint === undefined ? {} : { endpoint }),
      ...(region === undefined ? {} : { region }),
      ...(targetPath === undefined ? {} : { targetPath }),
      reducedRedundancy: flag("ReducedRedundancy"),
      makePublic: flag("MakePublic"),
      encrypted: flag("Encrypted"),
      tempDir: spool,
      ...(outboundProxy ? { outboundProxy } : {}),
    });
  }
  if (config.id === "azure") {
    const targetPath = text("TargetPath");
    return createAzureBlobStore({
      connectionString: text("ConnectionString") ?? "",
      containerName: text("ContainerName") ?? "",
      ...(targetPath === undefined ? {} : { targetPath }),
      tempDir: spool,
      ...(outboundProxy ? { outboundProxy } : {}),
      // The SDK's defaults retry for minutes; a stopped server should fail a request in seconds.
      pipeline: { retryOptions: { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2_000 } },
    });
  }
  throw new Error(`${config.id} is not an object store`);
}
