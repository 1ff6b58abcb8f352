import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { validateStorageConfig } from "../../src/domain/package-store.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../src/storage/secrets.js";
import { storeKeyOf } from "../../src/storage/store-factory.js";
import { storageEnvName } from "../../src/storage/storage-env.js";
import {
  hideStorageSecrets,
  openStorageSecrets,
  resealStorageSecrets,
  sealGivenSecrets,
} from "../../src/storage/storage-secrets.js";

/**
 * The settings of the package stores (issue 15): the server default from the environment, the
 * location key that tells stores apart, and the sealing of their secrets.
 */
const key = (): SecretKey => parseSecretKey(generateSecretKey()) as SecretKey;
const s3 = (properties: Record<string, unknown>) =>
  validateStorageConfig({
    id: "s3",
    properties: {
      AccessKey: "AK",
      SecretAccessKey: "s3-secret",
      RegionEndpoint: "us-east-1",
      BucketName: "b",
      ...properties,
    },
  });

describe("WHARF_PACKAGE_STORE and WHARF_<KIND>_<PROPERTY>", () => {
  it("derives each variable's name from the seed's property name", () => {
    expect(storageEnvName("s3", "SecretAccessKey")).toBe("WHARF_S3_SECRET_ACCESS_KEY");
    expect(storageEnvName("s3", "CustomServiceUrl")).toBe("WHARF_S3_CUSTOM_SERVICE_URL");
    expect(storageEnvName("azure", "ConnectionString")).toBe("WHARF_AZURE_CONNECTION_STRING");
  });

  it("is the disk when unset or disk, and an s3 or azure configuration otherwise", () => {
    expect(loadConfig({}).defaultStorage).toBeUndefined();
    expect(loadConfig({ WHARF_PACKAGE_STORE: "disk" }).defaultStorage).toBeUndefined();
    const config = loadConfig({
      WHARF_PACKAGE_STORE: "S3",
      WHARF_S3_ACCESS_KEY: "AK",
      WHARF_S3_SECRET_ACCESS_KEY: "s3-secret",
      WHARF_S3_REGION_ENDPOINT: "eu-west-1",
      WHARF_S3_BUCKET_NAME: "packages",
      WHARF_S3_ENCRYPTED: "true",
    });
    expect(config.defaultStorage).toEqual({
      id: "s3",
      properties: expect.objectContaining({ SecretAccessKey: "s3-secret", BucketName: "packages", Encrypted: true }),
    });
    expect(
      loadConfig({
        WHARF_PACKAGE_STORE: "azure",
        WHARF_AZURE_CONNECTION_STRING: "UseDevelopmentStorage=true",
        WHARF_AZURE_CONTAINER_NAME: "c",
      }).defaultStorage?.id,
    ).toBe("azure");
  });

  it("refuses an unknown kind or a missing property, naming the variable and never a secret's value", () => {
    expect(() => loadConfig({ WHARF_PACKAGE_STORE: "ftp" })).toThrow(/WHARF_PACKAGE_STORE/);
    let error: unknown;
    try {
      loadConfig({ WHARF_PACKAGE_STORE: "s3", WHARF_S3_SECRET_ACCESS_KEY: "do-not-print-me" });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/AccessKey.*WHARF_S3_/);
    expect((error as Error).message).not.toContain("do-not-print-me");
    const complete = {
      WHARF_PACKAGE_STORE: "s3",
      WHARF_S3_ACCESS_KEY: "AK",
      WHARF_S3_SECRET_ACCESS_KEY: "s",
      WHARF_S3_REGION_ENDPOINT: "us-east-1",
      WHARF_S3_BUCKET_NAME: "b",
    };
    expect(() => loadConfig({ ...complete, WHARF_S3_BUCKET_NAME: "" })).toThrow(/BucketName/);
    expect(() => loadConfig({ ...complete, WHARF_S3_USE_INSTANCE_PROFILE: "true" })).toThrow(/UseInstanceProfile/);
    expect(() => loadConfig({ ...complete, WHARF_S3_ENCRYPTED: "maybe" })).toThrow(/Encrypted/);
  });
});

describe("storeKeyOf: where a configuration puts its blobs", () => {
  it("is one key for one location, whatever the credentials, and never holds a secret", () => {
    const a = storeKeyOf(s3({ CustomServiceUrl: "http://127.0.0.1:9000/", TargetPath: "/wharf/" }));
    const b = storeKeyOf(
      s3({
        AccessKey: "other",
        SecretAccessKey: "other",
        CustomServiceUrl: "http://127.0.0.1:9000",
        TargetPath: "wharf",
      }),
    );
    expect(a).toBe(b);
    expect(a).toBe("s3:http://127.0.0.1:9000/b/wharf");
    expect(a).not.toContain("s3-secret");
    expect(storeKeyOf(s3({ TargetPath: "other" }))).not.toBe(storeKeyOf(s3({})));
    expect(storeKeyOf(s3({}))).toBe("s3:aws:us-east-1/b/");
    expect(storeKeyOf(undefined)).toBe("disk");
    const azure = storeKeyOf(
      validateStorageConfig({
        id: "azure",
        properties: {
          ConnectionString:
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0;EndpointSuffix=core.windows.net",
          ContainerName: "c",
        },
      }),
    );
    expect(azure).toBe("azure:acct/c/");
    expect(azure).not.toContain("c2VjcmV0");
  });
});

describe("storage secrets", () => {
  it("seals new secrets, keeps a stored one sent back hidden, and shows ******** in answers", () => {
    const box = createSecretBox(key());
    const stored = sealGivenSecrets(s3({}), undefined, box);
    expect(JSON.stringify(stored)).not.toContain("s3-secret");
    expect(stored.properties.AccessKey).toBe("AK"); // not a secret: kept readable
    expect(openStorageSecrets(stored, box).properties.SecretAccessKey).toBe("s3-secret");
    expect(hideStorageSecrets(stored).properties.SecretAccessKey).toBe("********");

    const again = sealGivenSecrets(s3({ SecretAccessKey: "********", TargetPath: "p" }), stored, box);
    expect(again.properties.SecretAccessKey).toBe(stored.properties.SecretAccessKey);
    expect(() => sealGivenSecrets(s3({ SecretAccessKey: "********" }), undefined, box)).toThrow(
      /send the secret itself/,
    );
  });

  it("reseals under the current key what a previous key sealed", () => {
    const old = key();
    const stored = sealGivenSecrets(s3({}), undefined, createSecretBox(old));
    const rotated = createSecretBox(key(), [old]);
    const resealed = resealStorageSecrets(stored, rotated);
    expect(resealed).toBeDefined();
    expect(resealStorageSecrets(resealed ?? stored, rotated)).toBeUndefined();
    expect(openStorageSecrets(resealed ?? stored, rotated).properties.SecretAccessKey).toBe("s3-secret");
  });
});
