/**
 * The feed storage kinds Wharf knows, as data: served as-is by `GET /api/storage` (docs/compat.md 5.2,
 * FeedStorageType) and used by package-store.ts to validate configurations.
 */

export type StorageTypeId = "disk" | "s3" | "azure";

export interface StorageProperty {
  required: boolean;
  /** Display name. */
  name: string;
  description: string;
  type: "string" | "boolean";
  placeholder?: string;
}

export interface StorageType {
  id: StorageTypeId;
  name: string;
  description: string;
  /** Keyed by the canonical (PascalCase) property name used in JSON and in the package-store XML. */
  properties: Readonly<Record<string, StorageProperty>>;
}

const text = (required: boolean, name: string, description: string, placeholder?: string): StorageProperty =>
  placeholder === undefined
    ? { required, name, description, type: "string" }
    : { required, name, description, type: "string", placeholder };

const flag = (name: string, description: string): StorageProperty => ({
  required: false,
  name,
  description,
  type: "boolean",
});

export const STORAGE_TYPES: readonly StorageType[] = [
  {
    id: "disk",
    name: "Disk",
    description: "Stores packages in a directory on the server's file system.",
    properties: {
      StoragePath: text(
        false,
        "Storage path",
        "Directory for this feed's packages; when empty, a directory under the server's packages root is used.",
      ),
    },
  },
  {
    id: "s3",
    name: "Amazon S3",
    description: "Stores packages in an Amazon S3 (or S3-compatible) bucket.",
    properties: {
      AccessKey: text(
        true,
        "Access key",
        "Access key ID of the account used to reach the bucket.",
        "AKIAIOSFODNN7EXAMPLE",
      ),
      SecretAccessKey: text(true, "Secret access key", "Secret access key belonging to the access key."),
      RegionEndpoint: text(true, "Region endpoint", "Region system name of the bucket.", "us-east-1"),
      BucketName: text(false, "Bucket name", "Name of the bucket.", "my-bucket"),
      TargetPath: text(false, "Target path", "Key prefix inside the bucket; the bucket root when empty."),
      ReducedRedundancy: flag("Reduced redundancy", "Store objects with the reduced-redundancy storage class."),
      MakePublic: flag("Make public", "Give uploaded objects a public-read ACL."),
      Encrypted: flag("Encrypted", "Request server-side encryption of stored objects."),
      InstanceRole: text(false, "Instance role", "IAM role to assume for access to the bucket."),
      UseInstanceProfile: flag("Use instance profile", "Use the credentials of the host's instance profile."),
      CustomServiceUrl: text(
        false,
        "Custom service URL",
        "Endpoint of an S3-compatible service to use instead of AWS.",
        "https://s3.example.com",
      ),
    },
  },
  {
    id: "azure",
    name: "Azure Blob Storage",
    description: "Stores packages in an Azure Blob Storage container.",
    properties: {
      ConnectionString: text(
        true,
        "Connection string",
        "Connection string of the storage account.",
        "DefaultEndpointsProtocol=https;AccountName=...;AccountKey=...",
      ),
      ContainerName: text(true, "Container name", "Name of the blob container.", "packages"),
      TargetPath: text(false, "Target path", "Path prefix inside the container; the container root when empty."),
    },
  },
];

/** Case-insensitive, as clients spell ids freely; undefined when unknown. */
export function findStorageType(id: string): StorageType | undefined {
  const lower = id.toLowerCase();
  return STORAGE_TYPES.find((type) => type.id === lower);
}

/**
 * Properties that hold a credential: sealed at rest, never returned (an API answer shows
 * HIDDEN_SECRET in their place) and never logged. An Azure connection string carries the account key.
 */
export const SECRET_STORAGE_PROPERTIES: ReadonlySet<string> = new Set(["SecretAccessKey", "ConnectionString"]);

/** What answers show for a secret property that is set; sent back unchanged, it keeps the stored secret. */
export const HIDDEN_SECRET = "********";
