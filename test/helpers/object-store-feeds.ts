import { randomUUID } from "node:crypto";
import { CreateBucketCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import type { AzuriteServer } from "./azurite.js";
import { type SwiftS3, swiftClient } from "./swift.js";

/**
 * A real object-store server for end-to-end feed tests (issue 15 section 3): what a user sends to
 * `POST /api/storage?feed=` to put a feed on it, and the server's own view of what it holds.
 */
export interface ObjectStoreServer {
  /** The FeedStorageConfiguration body, as a user would send it. */
  readonly storage: { readonly id: "s3" | "azure"; readonly properties: Record<string, string> };
  /** The store key the app reports in GC results (store-factory.ts storeKeyOf). */
  readonly storeKey: string;
  /** The secret in `storage`, which no answer may contain. */
  readonly secret: string;
  /** Names of the objects under the TargetPath, as the server lists them (not through Wharf). */
  objectNames(): Promise<string[]>;
  stop(): Promise<void>;
}

/** A bucket on a real OpenStack Swift (S3 API, checks V4 signatures and Content-MD5). */
export async function swiftStoreServer(started: Promise<SwiftS3>): Promise<ObjectStoreServer> {
  const swift = await started;
  const bucket = `wharf-e2e-${randomUUID().slice(0, 8)}`;
  const targetPath = "feeds/e2e";
  const client = swiftClient(swift);
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    storage: {
      id: "s3",
      properties: {
        AccessKey: swift.accessKeyId,
        SecretAccessKey: swift.secretAccessKey,
        RegionEndpoint: swift.region,
        BucketName: bucket,
        TargetPath: targetPath,
        CustomServiceUrl: swift.endpoint,
      },
    },
    storeKey: `s3:${swift.endpoint}/${bucket}/${targetPath}`,
    secret: swift.secretAccessKey,
    async objectNames() {
      const names: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: `${targetPath}/`, ContinuationToken: token }),
        );
        for (const object of page.Contents ?? []) if (object.Key) names.push(object.Key);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return names;
    },
    async stop() {
      client.destroy();
      await swift.stop();
    },
  };
}

/** A container on azurite (checks SharedKey signatures and transactional MD5), started by the caller. */
export async function azuriteStoreServer(started: Promise<AzuriteServer>): Promise<ObjectStoreServer> {
  const azurite = await started;
  const containerName = `wharf-e2e-${randomUUID().slice(0, 8)}`;
  const targetPath = "feeds/e2e";
  const container = BlobServiceClient.fromConnectionString(azurite.connectionString()).getContainerClient(
    containerName,
  );
  const connectionString = azurite.connectionString();
  return {
    storage: {
      id: "azure",
      properties: { ConnectionString: connectionString, ContainerName: containerName, TargetPath: targetPath },
    },
    storeKey: `azure:http://127.0.0.1:${azurite.port}/devstoreaccount1/${containerName}/${targetPath}`,
    secret: connectionString.split("AccountKey=")[1]?.split(";")[0] ?? "",
    async objectNames() {
      const names: string[] = [];
      if (!(await container.exists())) return names;
      for await (const item of container.listBlobsFlat({ prefix: `${targetPath}/` })) names.push(item.name);
      return names;
    },
    stop: () => azurite.stop(),
  };
}
