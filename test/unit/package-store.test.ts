import { XMLParser } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import {
  formatPackageStoreXml,
  parsePackageStoreXml,
  STORAGE_TYPES,
  type StorageConfig,
  validateStorageConfig,
} from "../../src/domain/package-store.js";

function caught(action: () => unknown): DomainError {
  try {
    action();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("expected a DomainError");
}

const S3_NULLS = {
  AccessKey: null,
  SecretAccessKey: null,
  RegionEndpoint: null,
  BucketName: null,
  TargetPath: null,
  ReducedRedundancy: null,
  MakePublic: null,
  Encrypted: null,
  InstanceRole: null,
  UseInstanceProfile: null,
  CustomServiceUrl: null,
};
const S3_MINIMAL = { AccessKey: "AKIA", SecretAccessKey: "secret", RegionEndpoint: "us-east-1" };

describe("STORAGE_TYPES", () => {
  it("has the FeedStorageType shape of docs/compat.md 5.2", () => {
    expect(STORAGE_TYPES.map((t) => t.id)).toEqual(["disk", "s3", "azure"]);
    for (const type of STORAGE_TYPES) {
      expect(type.name).not.toBe("");
      expect(type.description).not.toBe("");
      for (const property of Object.values(type.properties)) {
        expect(Object.keys(property).sort()).toEqual(
          expect.arrayContaining(["description", "name", "required", "type"]),
        );
        expect(["string", "boolean"]).toContain(property.type);
      }
    }
    const required = (id: string) =>
      Object.entries(STORAGE_TYPES.find((t) => t.id === id)?.properties ?? {})
        .filter(([, p]) => p.required)
        .map(([name]) => name);
    expect(required("disk")).toEqual([]);
    expect(required("s3")).toEqual(["AccessKey", "SecretAccessKey", "RegionEndpoint"]);
    expect(required("azure")).toEqual(["ConnectionString", "ContainerName"]);
    expect(Object.keys(STORAGE_TYPES[1]?.properties ?? {})).toEqual(Object.keys(S3_NULLS));
  });

  it("serialises to JSON", () => {
    expect(JSON.parse(JSON.stringify(STORAGE_TYPES))).toEqual(STORAGE_TYPES);
  });
});

describe("validateStorageConfig", () => {
  const accepted: [input: unknown, expected: StorageConfig][] = [
    [
      { id: "disk", properties: { StoragePath: null } },
      { id: "disk", properties: { StoragePath: null } },
    ],
    [{ id: "disk" }, { id: "disk", properties: { StoragePath: null } }],
    [
      { id: "disk", properties: null },
      { id: "disk", properties: { StoragePath: null } },
    ],
    [
      { id: "Disk", properties: { storagepath: "/srv/x" } },
      { id: "disk", properties: { StoragePath: "/srv/x" } },
    ],
    [
      { id: "disk", properties: { StoragePath: "" } },
      { id: "disk", properties: { StoragePath: null } },
    ],
    [
      { id: "S3", properties: S3_MINIMAL },
      { id: "s3", properties: { ...S3_NULLS, ...S3_MINIMAL } },
    ],
    [
      { id: "s3", properties: { ...S3_MINIMAL, makepublic: "True", Encrypted: false, ReducedRedundancy: " FALSE " } },
      {
        id: "s3",
        properties: { ...S3_NULLS, ...S3_MINIMAL, MakePublic: true, Encrypted: false, ReducedRedundancy: false },
      },
    ],
    [
      { id: "s3", properties: { ...S3_MINIMAL, UseInstanceProfile: "", BucketName: "b" } },
      { id: "s3", properties: { ...S3_NULLS, ...S3_MINIMAL, BucketName: "b" } },
    ],
    [
      { id: "azure", properties: { ConnectionString: "A=1;B=2", ContainerName: "c" } },
      { id: "azure", properties: { ConnectionString: "A=1;B=2", ContainerName: "c", TargetPath: null } },
    ],
  ];
  it.each(accepted)("%j", (input, expected) => {
    const result = validateStorageConfig(input);
    expect(result).toEqual(expected);
    expect(Object.keys(result.properties)).toEqual(Object.keys(expected.properties));
  });

  const rejected: [input: unknown, message: RegExp][] = [
    [null, /must be an object/],
    ["disk", /must be an object/],
    [[], /must be an object/],
    [{}, /storage type id is required/],
    [{ id: "" }, /storage type id is required/],
    [{ id: 3 }, /storage type id is required/],
    [{ id: "ftp" }, /unknown storage type 'ftp'/],
    [{ id: "disk", properties: [] }, /properties must be an object/],
    [{ id: "disk", properties: "x" }, /properties must be an object/],
    [{ id: "disk", properties: { Bucket: "x" } }, /unknown property 'Bucket' for disk storage/],
    [{ id: "disk", properties: { __proto__: null, constructor: "x" } }, /unknown property 'constructor'/],
    [{ id: "azure", properties: { ConnectionString: "x", ContainerName: "c", AccessKey: "k" } }, /'AccessKey'/],
    [{ id: "disk", properties: { StoragePath: "a", storagePath: "b" } }, /'StoragePath' is given more than once/],
    [{ id: "s3", properties: {} }, /property 'AccessKey' is required for s3 storage/],
    [{ id: "s3", properties: { ...S3_MINIMAL, RegionEndpoint: "  " } }, /'RegionEndpoint' is required/],
    [{ id: "s3", properties: { ...S3_MINIMAL, SecretAccessKey: null } }, /'SecretAccessKey' is required/],
    [{ id: "azure", properties: { ConnectionString: "x" } }, /'ContainerName' is required for azure/],
    [{ id: "s3", properties: { ...S3_MINIMAL, MakePublic: "yes" } }, /'MakePublic' must be true or false/],
    [{ id: "s3", properties: { ...S3_MINIMAL, MakePublic: 1 } }, /'MakePublic' must be true or false/],
    [{ id: "s3", properties: { ...S3_MINIMAL, BucketName: true } }, /'BucketName' must be a string/],
    [{ id: "disk", properties: { StoragePath: 5 } }, /'StoragePath' must be a string/],
  ];
  it.each(rejected)("%j -> %s", (input, message) => {
    const error = caught(() => validateStorageConfig(input));
    expect(error).toMatchObject({ kind: "invalid", code: "INVALID_STORAGE_CONFIG" });
    expect(error.message).toMatch(message);
  });
});

describe("parsePackageStoreXml", () => {
  const accepted: [xml: string, expected: StorageConfig][] = [
    [
      `<Inedo.ProGet.Extensions.AWS.PackageStores.S3PackageStore Assembly="AWS"><Properties AccessKey="k" SecretAccessKey="s" RegionEndpoint="us-west-2" BucketName="b" MakePublic="True" Encrypted="False" /></Inedo.ProGet.Extensions.AWS.PackageStores.S3PackageStore>`,
      {
        id: "s3",
        properties: {
          ...S3_NULLS,
          AccessKey: "k",
          SecretAccessKey: "s",
          RegionEndpoint: "us-west-2",
          BucketName: "b",
          MakePublic: true,
          Encrypted: false,
        },
      },
    ],
    [
      `<?xml version="1.0" encoding="utf-8"?>\n<Vendor.Azure.AzurePackageStore Assembly="Azure">\n  <Properties ConnectionString="A=1;B=2" ContainerName="pkgs" TargetPath="x/y" />\n</Vendor.Azure.AzurePackageStore>`,
      { id: "azure", properties: { ConnectionString: "A=1;B=2", ContainerName: "pkgs", TargetPath: "x/y" } },
    ],
    [
      `<SomeBlobStore Assembly="x"><Properties ConnectionString="c" ContainerName="n"/></SomeBlobStore>`,
      { id: "azure", properties: { ConnectionString: "c", ContainerName: "n", TargetPath: null } },
    ],
    [`<DiskPackageStore Assembly="Wharf"/>`, { id: "disk", properties: { StoragePath: null } }],
    [
      `<Vendor.FileSystemPackageStore Assembly="x"><Properties StoragePath="C:\\Packages"/></Vendor.FileSystemPackageStore>`,
      { id: "disk", properties: { StoragePath: "C:\\Packages" } },
    ],
    // unknown class name, recognised by properties only one type has
    [
      `<Custom.Store Assembly="x"><Properties AccessKey="k" SecretAccessKey="s" RegionEndpoint="r" TargetPath="t"/></Custom.Store>`,
      {
        id: "s3",
        properties: {
          ...S3_NULLS,
          ...S3_MINIMAL,
          AccessKey: "k",
          SecretAccessKey: "s",
          RegionEndpoint: "r",
          TargetPath: "t",
        },
      },
    ],
    [`<Custom.Store><Properties StoragePath="/p"/></Custom.Store>`, { id: "disk", properties: { StoragePath: "/p" } }],
    // property names are case-insensitive; references decoded
    [
      `<DiskPackageStore><Properties storagepath="a&amp;b&lt;c&gt;d&quot;e&apos;f&#65;&#x42;&#xA;g"/></DiskPackageStore>`,
      { id: "disk", properties: { StoragePath: "a&b<c>d\"e'fAB\ng" } },
    ],
    [
      `<DiskPackageStore><Properties StoragePath='say "hi"'/></DiskPackageStore>`,
      { id: "disk", properties: { StoragePath: 'say "hi"' } },
    ],
    // comments and a text node are ignored
    [
      `<!-- c --><DiskPackageStore><!-- c --><Properties StoragePath="/p"/>text</DiskPackageStore>`,
      { id: "disk", properties: { StoragePath: "/p" } },
    ],
  ];
  it.each(accepted)("%s", (xml, expected) => {
    expect(parsePackageStoreXml(xml)).toEqual(expected);
  });

  const rejected: [xml: string, code: string, message: RegExp][] = [
    ["", "INVALID_PACKAGE_STORE", /empty/],
    ["   ", "INVALID_PACKAGE_STORE", /empty/],
    ["not xml", "INVALID_PACKAGE_STORE", /malformed/],
    [`<DiskPackageStore><Properties StoragePath="x"></DiskPackageStore>`, "INVALID_PACKAGE_STORE", /malformed.*line 1/],
    [
      `<DiskPackageStore><Properties StoragePath="x" StoragePath="y"/></DiskPackageStore>`,
      "INVALID_PACKAGE_STORE",
      /malformed/,
    ],
    [`<DiskPackageStore><Properties StoragePath/></DiskPackageStore>`, "INVALID_PACKAGE_STORE", /malformed/],
    [`<DiskPackageStore><Properties StoragePath="a<b"/></DiskPackageStore>`, "INVALID_PACKAGE_STORE", /raw '<'/],
    [`<A/><B/>`, "INVALID_PACKAGE_STORE", /exactly one root element/],
    [`<A/><A/>`, "INVALID_PACKAGE_STORE", /exactly one root element/],
    [
      `<DiskPackageStore><Properties/><Properties/></DiskPackageStore>`,
      "INVALID_PACKAGE_STORE",
      /more than one Properties/,
    ],
    [
      `<FtpStore Assembly="x"><Properties Host="h"/></FtpStore>`,
      "INVALID_PACKAGE_STORE",
      /unknown package store 'FtpStore'/,
    ],
    [`<Custom><Properties TargetPath="t"/></Custom>`, "INVALID_PACKAGE_STORE", /unknown package store 'Custom'/],
    [
      `<Custom><Properties StoragePath="p" ContainerName="c"/></Custom>`,
      "INVALID_PACKAGE_STORE",
      /unknown package store/,
    ],
    [
      `<DiskPackageStore><Properties StoragePath="a&b"/></DiskPackageStore>`,
      "INVALID_PACKAGE_STORE",
      /unsupported entity reference '&b'/,
    ],
    [`<DiskPackageStore><Properties StoragePath="&nbsp;"/></DiskPackageStore>`, "INVALID_PACKAGE_STORE", /'&nbsp;'/],
    [`<DiskPackageStore><Properties StoragePath="&#0;"/></DiskPackageStore>`, "INVALID_PACKAGE_STORE", /'&#0;'/],
    [
      `<DiskPackageStore><Properties StoragePath="&#x110000;"/></DiskPackageStore>`,
      "INVALID_PACKAGE_STORE",
      /unsupported entity/,
    ],
    [
      `<DiskPackageStore><Properties StoragePath="&AMP;"/></DiskPackageStore>`,
      "INVALID_PACKAGE_STORE",
      /unsupported entity/,
    ],
    // then validated like validateStorageConfig
    [
      `<S3PackageStore><Properties AccessKey="k"/></S3PackageStore>`,
      "INVALID_STORAGE_CONFIG",
      /'SecretAccessKey' is required/,
    ],
    [
      `<DiskPackageStore><Properties Bucket="b"/></DiskPackageStore>`,
      "INVALID_STORAGE_CONFIG",
      /unknown property 'Bucket'/,
    ],
    [
      `<S3PackageStore><Properties ${attrs(S3_MINIMAL)} MakePublic="maybe"/></S3PackageStore>`,
      "INVALID_STORAGE_CONFIG",
      /'MakePublic'/,
    ],
    [`<DiskPackageStore><Properties __proto__="x"/></DiskPackageStore>`, "INVALID_STORAGE_CONFIG", /'__proto__'/],
  ];
  it.each(rejected)("%s -> %s %s", (xml, code, message) => {
    const error = caught(() => parsePackageStoreXml(xml));
    expect(error).toMatchObject({ kind: "invalid", code });
    expect(error.message).toMatch(message);
  });

  it("does not expand DOCTYPE entities (billion laughs, external entities)", () => {
    const laughs = [
      `<?xml version="1.0"?>`,
      `<!DOCTYPE lolz [`,
      `<!ENTITY lol "lol">`,
      ...Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? "" : i};`.repeat(10)}">`),
      `]>`,
      `<DiskPackageStore><Properties StoragePath="&lol9;"/></DiskPackageStore>`,
    ].join("\n");
    const started = performance.now();
    expect(caught(() => parsePackageStoreXml(laughs))).toMatchObject({ code: "INVALID_PACKAGE_STORE" });
    expect(performance.now() - started).toBeLessThan(1000);

    const external = `<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><DiskPackageStore><Properties StoragePath="&x;"/></DiskPackageStore>`;
    expect(caught(() => parsePackageStoreXml(external))).toMatchObject({ code: "INVALID_PACKAGE_STORE" });
  });

  it("never lets a non-DomainError escape, whatever the input", () => {
    const inputs = [
      "<",
      "<a>",
      "<a/",
      "<a b='1' b='2'/>",
      "\u0000",
      "<<>>",
      "<a",
      "</a>",
      "<a></b>",
      "<?xml?>",
      "<!DOCTYPE",
      "<![CDATA[x]]>",
      "&amp;",
      "<a b=>",
    ];
    for (const input of inputs) {
      const error = caught(() => parsePackageStoreXml(input));
      expect(error.kind).toBe("invalid");
      expect(error.message).not.toContain("column undefined");
    }
  });
});

describe("formatPackageStoreXml", () => {
  it("writes the element, Assembly and the non-null properties", () => {
    const xml = formatPackageStoreXml({
      id: "s3",
      properties: { ...S3_NULLS, ...S3_MINIMAL, MakePublic: true, Encrypted: false },
    });
    expect(xml).toBe(
      `<S3PackageStore Assembly="Wharf"><Properties AccessKey="AKIA" SecretAccessKey="secret" RegionEndpoint="us-east-1" MakePublic="true" Encrypted="false"/></S3PackageStore>`,
    );
  });

  it("writes an empty Properties element for a default disk store", () => {
    const xml = formatPackageStoreXml({ id: "disk", properties: { StoragePath: null } });
    const parsed: unknown = new XMLParser({ ignoreAttributes: false }).parse(xml);
    expect(parsed).toEqual({ DiskPackageStore: { "@_Assembly": "Wharf", Properties: "" } });
  });

  it("refuses an invalid config instead of writing it", () => {
    const config = { id: "disk", properties: { "bad name": "x" } } as StorageConfig;
    expect(caught(() => formatPackageStoreXml(config)).code).toBe("INVALID_STORAGE_CONFIG");
  });

  const awkward = [
    `say "hi"`,
    `it's`,
    `a<b>c`,
    `a&b&amp;c`,
    `&lt;&#65;`,
    `"'<>&`,
    `  spaced  `,
    `line1\nline2\ttab`,
    `DefaultEndpointsProtocol=https;AccountName=n;AccountKey=H+2d/Pz==;EndpointSuffix=core.windows.net`,
    `C:\\ProgramData\\ProGet`,
    `ünïcødé ✓ 😀`,
  ];
  it.each(awkward)("round-trips %j", (value) => {
    const configs: StorageConfig[] = [
      validateStorageConfig({ id: "disk", properties: { StoragePath: value } }),
      validateStorageConfig({
        id: "azure",
        properties: { ConnectionString: value, ContainerName: value, TargetPath: value },
      }),
      validateStorageConfig({
        id: "s3",
        properties: { ...S3_MINIMAL, SecretAccessKey: value, CustomServiceUrl: value, UseInstanceProfile: true },
      }),
    ];
    for (const config of configs) {
      const xml = formatPackageStoreXml(config);
      expect(parsePackageStoreXml(xml)).toEqual(config);
    }
  });

  it.each(STORAGE_TYPES.map((t) => t.id))("round-trips a fully populated %s config", (id) => {
    const type = STORAGE_TYPES.find((t) => t.id === id);
    const properties = Object.fromEntries(
      Object.entries(type?.properties ?? {}).map(([name, p]) => [name, p.type === "boolean" ? true : `v-${name}`]),
    );
    const config = validateStorageConfig({ id, properties });
    expect(parsePackageStoreXml(formatPackageStoreXml(config))).toEqual(config);
  });
});

function attrs(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([name, value]) => `${name}="${value}"`)
    .join(" ");
}
