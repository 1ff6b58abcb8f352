import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import type { ProxySettings } from "../../src/net/outbound-proxy.js";
import { createAzureBlobStore } from "../../src/storage/azure-blob-store.js";
import type { BlobStore, SizedReads } from "../../src/storage/blob-store.js";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { startTestProxy } from "../helpers/http-proxy.js";
import { filesUnder } from "../helpers/temp-files.js";
import { describeBlobStoreContract } from "./blob-store.contract.js";

let azurite: AzuriteServer;
beforeAll(async () => {
  azurite = await startAzurite();
}, 30_000);
afterAll(async () => {
  await azurite?.stop();
});

/** A store on a container of its own, so that every test starts empty. */
async function makeStore(options: { blockBytes?: number; targetPath?: string } = {}) {
  const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
  const containerName = `wharf-${randomUUID()}`;
  const store = createAzureBlobStore({
    connectionString: azurite.connectionString(),
    containerName,
    targetPath: options.targetPath ?? "packages/feed",
    tempDir,
    ...options,
  });
  const service = BlobServiceClient.fromConnectionString(azurite.connectionString());
  return {
    store,
    tempDir,
    container: service.getContainerClient(containerName),
    cleanup: async () => {
      await service.getContainerClient(containerName).deleteIfExists();
      await rm(tempDir, { recursive: true, force: true });
    },
  };
}

describeBlobStoreContract("azure (azurite)", async () => {
  const made = await makeStore();
  return {
    store: made.store,
    cleanup: made.cleanup,
    tempFileCount: async () => (await filesUnder(made.tempDir)).length,
  };
});

describe("azure blob store specifics", { timeout: 20_000 }, () => {
  let made: Awaited<ReturnType<typeof makeStore>>;
  let store: BlobStore & SizedReads;
  beforeEach(async () => {
    made = await makeStore({ blockBytes: 64 * 1024 });
    store = made.store;
  });
  afterEach(async () => {
    await made.cleanup();
  });

  const sha256 = (content: Buffer) => createHash("sha256").update(content).digest("hex");
  async function readAll(stream: Readable | undefined) {
    if (!stream) throw new Error("absent");
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  it("names blobs <TargetPath>/blobs/<sha256> as committed block blobs of several blocks", async () => {
    const content = randomBytes(200_000);
    const info = await store.put(Readable.from([content]));
    const blob = made.container.getBlockBlobClient(`packages/feed/blobs/${info.sha256}`);
    const blocks = await blob.getBlockList("all");
    expect(blocks.committedBlocks?.map((block) => block.size)).toEqual([65536, 65536, 65536, 200_000 - 3 * 65536]);
    expect(blocks.uncommittedBlocks).toEqual([]);
    const properties = await blob.getProperties();
    expect(properties.contentMD5 && Buffer.from(properties.contentMD5).toString("hex")).toBe(
      createHash("md5").update(content).digest("hex"),
    );
  });

  it("reads a range across block boundaries, and single bytes at either end", async () => {
    const content = randomBytes(300_000);
    const { sha256: address } = await store.put(Readable.from([content]));
    const range = { start: 65_000, end: 140_000 };
    expect((await readAll(await store.open(address, range))).equals(content.subarray(range.start, range.end + 1))).toBe(
      true,
    );
    expect(await readAll(await store.open(address, { start: 0, end: 0 }))).toEqual(content.subarray(0, 1));
    expect(await readAll(await store.open(address, { start: 299_999, end: 299_999 }))).toEqual(
      content.subarray(299_999),
    );
  });

  it("sends each block's MD5, which azurite checks: a block with a wrong one is refused", async () => {
    // The store's own requests carry transactionalContentMD5 (proved by azurite accepting the
    // blocks above); here, that the emulator really checks it, so that the test means something.
    const blob = made.container.getBlockBlobClient("probe");
    await made.container.createIfNotExists();
    const block = randomBytes(1000);
    const wrongMd5 = createHash("md5").update(randomBytes(10)).digest();
    const id = Buffer.from("block-000001").toString("base64");
    await expect(blob.stageBlock(id, block, block.length, { transactionalContentMD5: wrongMd5 })).rejects.toMatchObject(
      {
        statusCode: 400,
      },
    );
    const rightMd5 = createHash("md5").update(block).digest();
    await blob.stageBlock(id, block, block.length, { transactionalContentMD5: rightMd5 });
  });

  it("sends each block's MD5: a block corrupted on the way is refused, the put fails and nothing is visible", async () => {
    const proxy = await corruptingProxy(azurite.port, "second block");
    const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
    try {
      const throughProxy = storeThrough(proxy.port, made.container.containerName, tempDir);
      const content = randomBytes(150_000);
      const failure = await throughProxy.put(Readable.from([content])).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "AZURE_REQUEST_FAILED", kind: "bad_gateway" });
      expect((failure as Error).message).toMatch(/400/);
      expect(proxy.blockMd5s.length).toBeGreaterThan(0);
      expect(proxy.blockMd5s.every((md5) => md5?.length === 24)).toBe(true);
      expect(await store.stat(sha256(content))).toBeUndefined();
      expect(await filesUnder(tempDir)).toEqual([]);
    } finally {
      await rm(tempDir, { recursive: true, force: true });
      await new Promise((resolve) => proxy.server.close(resolve));
    }
  });

  /** Runs `work` with a store of the test's container reached through a recording proxy. */
  async function throughProxy(
    work: (proxied: BlobStore, proxy: Awaited<ReturnType<typeof corruptingProxy>>) => Promise<void>,
    corrupt?: Corruption,
  ) {
    const proxy = await corruptingProxy(azurite.port, corrupt);
    const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
    try {
      await work(storeThrough(proxy.port, made.container.containerName, tempDir), proxy);
      expect(await filesUnder(tempDir)).toEqual([]);
    } finally {
      await rm(tempDir, { recursive: true, force: true });
      await new Promise((resolve) => proxy.server.close(resolve));
    }
  }

  const base64Md5 = (content: Buffer) => createHash("md5").update(content).digest("base64");

  it("stores a new blob that fits one block with one Put Blob, on condition that the name is free", async () => {
    await throughProxy(async (proxied, proxy) => {
      await proxied.put(Readable.from([randomBytes(10)])); // the container, created once per store
      for (const size of [5000, 64 * 1024, 0]) {
        proxy.requests.length = 0;
        const content = randomBytes(size);
        const info = await proxied.put(Readable.from([content]));
        expect(proxy.requests).toEqual([
          {
            method: "PUT",
            url: `/devstoreaccount1/${made.container.containerName}/packages/feed/blobs/${info.sha256}`,
            ifNoneMatch: "*",
            blobContentMd5: base64Md5(content),
            contentType: "application/octet-stream",
            status: 201,
          },
        ]);
        expect((await readAll(await store.open(info.sha256))).equals(content)).toBe(true);
        const properties = await made.container
          .getBlockBlobClient(`packages/feed/blobs/${info.sha256}`)
          .getProperties();
        expect(properties.contentType).toBe("application/octet-stream");
        expect(properties.contentMD5 && Buffer.from(properties.contentMD5).toString("base64")).toBe(base64Md5(content));
      }
      // One byte past a block: staged blocks, looked up first.
      proxy.requests.length = 0;
      await proxied.put(Readable.from([randomBytes(64 * 1024 + 1)]));
      expect(proxy.requests.map((r) => `${r.method} ${r.status}`)).toEqual([
        "HEAD 404",
        "PUT 201",
        "PUT 201",
        "PUT 201",
      ]);
    });
  });

  it("a put of bytes already stored: the conditional Put Blob is refused, the size seen, the same info returned", async () => {
    await throughProxy(async (proxied, proxy) => {
      const content = randomBytes(5000);
      const first = await proxied.put(Readable.from([content]), { extraDigests: ["md5"] });
      const blob = made.container.getBlockBlobClient(`packages/feed/blobs/${first.sha256}`);
      const etag = (await blob.getProperties()).etag;
      proxy.requests.length = 0;
      const again = await proxied.put(Readable.from([content]), { extraDigests: ["md5"] });
      expect(again).toEqual(first);
      expect(proxy.requests.map((r) => `${r.method} ${r.status}`)).toEqual(["PUT 409", "HEAD 200"]);
      // Not written again: the very blob stored first, bytes intact.
      expect((await blob.getProperties()).etag).toBe(etag);
      expect((await readAll(await store.open(first.sha256))).equals(content)).toBe(true);
      expect(await store.totalBytes()).toBe(5000);
    });
  });

  it("replaces a blob stored under the address with another size (a damaged copy), small or in blocks", async () => {
    await throughProxy(async (proxied, proxy) => {
      await proxied.put(Readable.from([randomBytes(10)])); // the container, created once per store
      for (const size of [5000, 200_000]) {
        const content = randomBytes(size);
        const blob = made.container.getBlockBlobClient(`packages/feed/blobs/${sha256(content)}`);
        await made.container.createIfNotExists();
        await blob.upload("damaged", 7);
        proxy.requests.length = 0;
        const info = await proxied.put(Readable.from([content]));
        expect(info.size).toBe(size);
        expect(await store.stat(info.sha256)).toEqual({ size });
        expect((await readAll(await store.open(info.sha256))).equals(content)).toBe(true);
        const [first, second] = proxy.requests;
        // Small: refused on condition, looked up, then written without one. In blocks: looked up first.
        if (size === 5000) {
          expect(proxy.requests.map((r) => `${r.method} ${r.status}`)).toEqual(["PUT 409", "HEAD 200", "PUT 201"]);
          expect([first?.ifNoneMatch, proxy.requests[2]?.ifNoneMatch]).toEqual(["*", undefined]);
        } else {
          expect(`${first?.method} ${first?.status} ${second?.method}`).toBe("HEAD 200 PUT");
        }
      }
    });
  });

  it("sends the whole blob's MD5 with a single Put Blob: one corrupted on the way is refused, nothing visible", async () => {
    const content = randomBytes(5000);
    await throughProxy(async (proxied, proxy) => {
      const failure = await proxied.put(Readable.from([content])).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "AZURE_REQUEST_FAILED", kind: "bad_gateway" });
      expect((failure as Error).message).toMatch(/400/);
      expect(proxy.requests.at(-1)?.blobContentMd5).toBe(base64Md5(content));
      expect(await store.stat(sha256(content))).toBeUndefined();
    }, "put blob");
  });

  it("reads a blob and its whole size in one download, with no properties call first, ranged or not", async () => {
    const content = randomBytes(5000);
    const { sha256: address } = await store.put(Readable.from([content]));
    const empty = await store.put(Readable.from([]));
    // Stored through the proxy only to read through it: no block of these puts is corrupted.
    const proxy = await corruptingProxy(azurite.port);
    const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
    try {
      const throughProxy = storeThrough(proxy.port, made.container.containerName, tempDir);
      const whole = await throughProxy.openSized(address);
      expect(whole?.size).toBe(5000);
      expect(await readAll(whole?.stream)).toEqual(content);
      const part = await throughProxy.openSized(address, { start: 100, end: 199 });
      expect(part?.size).toBe(5000);
      expect(await readAll(part?.stream)).toEqual(content.subarray(100, 200));
      expect(await throughProxy.openSized(sha256(randomBytes(10)))).toBeUndefined();
      expect(proxy.methods).toEqual(["GET", "GET", "GET"]);
      // An empty blob, and a range past what is stored: the stored size and no bytes.
      const nothing = await throughProxy.openSized(empty.sha256, { start: 0, end: -1 });
      expect(nothing?.size).toBe(0);
      expect(await readAll(nothing?.stream)).toEqual(Buffer.alloc(0));
      const beyond = await throughProxy.openSized(address, { start: 6000, end: 6999 });
      expect(beyond?.size).toBe(5000);
      expect(await readAll(beyond?.stream)).toEqual(Buffer.alloc(0));
    } finally {
      await rm(tempDir, { recursive: true, force: true });
      await new Promise((resolve) => proxy.server.close(resolve));
    }
  });

  it("refuses a wrong account key with a clear error that does not contain either key", async () => {
    const wrongKey = randomBytes(64).toString("base64");
    const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
    try {
      const refused = createAzureBlobStore({
        connectionString: azurite.connectionString(wrongKey),
        containerName: "wharf-wrong-key",
        tempDir,
        pipeline: { retryOptions: { maxTries: 1 } },
      });
      const failure = await refused.put(Readable.from([randomBytes(100)])).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DomainError);
      expect(failure).toMatchObject({ code: "AZURE_AUTHENTICATION_FAILED", kind: "bad_gateway" });
      const text = `${(failure as Error).message} ${JSON.stringify(failure)} ${String((failure as Error).cause)}`;
      expect((failure as Error).message).toMatch(/AccountKey/);
      expect(text).not.toContain(wrongKey);
      expect(text).not.toContain(azurite.connectionString().split("AccountKey=")[1]?.split(";")[0]);
      const statFailure = await refused.stat("0".repeat(64)).catch((error: unknown) => error);
      expect(statFailure).toMatchObject({ code: "AZURE_AUTHENTICATION_FAILED" });
      expect(await filesUnder(tempDir)).toEqual([]);
    } finally {
      await rm(tempDir, { recursive: true, force: true });
    }
  });

  it("vets the endpoint's host name at each connection: loopback is used, a metadata address refused", async () => {
    // "azurite.test" exists in no DNS: only the store's own lookup can make it reach azurite.
    const connectionString = azurite.connectionString().replace("//127.0.0.1:", "//azurite.test:");
    const asked: string[] = [];
    const resolvingTo = (address: string) => async (hostname: string) => {
      asked.push(hostname);
      return [{ address, family: 4 }];
    };
    const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
    const storeResolving = (address: string) =>
      createAzureBlobStore({
        connectionString,
        containerName: made.container.containerName,
        targetPath: "packages/feed",
        tempDir,
        resolveHost: resolvingTo(address),
        pipeline: { retryOptions: { maxTries: 1 } },
      });
    try {
      const info = await storeResolving("127.0.0.1").put(Readable.from([randomBytes(100)]));
      expect(await store.stat(info.sha256)).toEqual({ size: 100 });
      expect(asked).toContain("azurite.test");
      // A name that resolves to the cloud metadata address (DNS rebinding) is refused, not sent to.
      const failure = await storeResolving("169.254.169.254")
        .stat(info.sha256)
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DomainError);
      expect(failure).toMatchObject({ code: "OBJECT_STORE_ADDRESS_REFUSED", kind: "bad_gateway" });
      expect((failure as Error).message).toMatch(/azurite\.test.*cloud metadata address/);
    } finally {
      await rm(tempDir, { recursive: true, force: true });
    }
  });

  it("goes through the server's HTTP proxy where it applies, and vets the store where it connects itself", async () => {
    const connectionString = azurite.connectionString().replace("//127.0.0.1:", "//azurite.test:");
    const asked: string[] = [];
    const toMetadata = async (hostname: string) => {
      asked.push(hostname);
      return [{ address: "169.254.169.254", family: 4 }];
    };
    // A real proxy, which connects to 127.0.0.1 whatever the request names.
    const proxy = await startTestProxy();
    const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-azure-spool-"));
    try {
      const storeWith = (outboundProxy: ProxySettings) =>
        createAzureBlobStore({
          connectionString,
          containerName: made.container.containerName,
          targetPath: "packages/feed",
          tempDir,
          resolveHost: toMetadata,
          outboundProxy,
          pipeline: { retryOptions: { maxTries: 1 } },
        });
      // Through the proxy: the proxy reaches the store; Wharf's lookup is never asked.
      const info = await storeWith({ httpProxy: proxy.url }).put(Readable.from([randomBytes(100)]));
      expect(await store.stat(info.sha256)).toEqual({ size: 100 });
      expect(proxy.requests.some((line) => line.includes("http://azurite.test:"))).toBe(true);
      expect(asked).toEqual([]);
      // NO_PROXY names the store: Wharf connects itself, and vets the address.
      const seenByProxy = proxy.requests.length;
      const direct = await storeWith({ httpProxy: proxy.url, noProxy: "azurite.test" })
        .stat(info.sha256)
        .catch((error: unknown) => error);
      expect(direct).toMatchObject({ code: "OBJECT_STORE_ADDRESS_REFUSED" });
      expect(asked).toEqual(["azurite.test"]);
      expect(proxy.requests.length).toBe(seenByProxy);
    } finally {
      await proxy.close();
      await rm(tempDir, { recursive: true, force: true });
    }
  });

  it("refuses a malformed connection string without repeating it", () => {
    const secret = "NotAKeyButSecret123";
    let failure: unknown;
    try {
      createAzureBlobStore({
        connectionString: `garbage;AccountKey=${secret}`,
        containerName: "x-y-z",
        tempDir: "/tmp/x",
      });
    } catch (error) {
      failure = error;
    }
    expect(failure).toMatchObject({ code: "AZURE_CONNECTION_STRING_INVALID", kind: "invalid" });
    expect((failure as Error).message).not.toContain(secret);
  });

  it("leaves no visible blob when the put is interrupted between staged blocks", async () => {
    const content = randomBytes(400_000);
    const controller = new AbortController();
    let staged = 0;
    // Abort once Azure holds a few uncommitted blocks of this blob.
    const address = sha256(content);
    const blob = made.container.getBlockBlobClient(`packages/feed/blobs/${address}`);
    const watcher = (async () => {
      for (;;) {
        const list = await blob.getBlockList("uncommitted").catch(() => undefined);
        staged = list?.uncommittedBlocks?.length ?? 0;
        if (staged >= 2) {
          controller.abort(new Error("interrupted"));
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    const outcome = await store.put(Readable.from([content]), { signal: controller.signal }).then(
      () => "stored",
      (error: unknown) => (error as Error).message,
    );
    await watcher;
    // Either the abort came between blocks (the usual case) or the put had already finished.
    if (outcome !== "stored") {
      expect(outcome).toBe("interrupted");
      expect(await store.stat(address)).toBeUndefined();
      expect(await store.open(address)).toBeUndefined();
      const listed: string[] = [];
      for await (const name of store.list()) listed.push(name);
      expect(listed).toEqual([]);
      expect(staged).toBeGreaterThanOrEqual(2);
    }
    expect(await filesUnder(made.tempDir)).toEqual([]);
    // A later put of the same bytes commits only its own blocks.
    const info = await store.put(Readable.from([content]));
    expect((await readAll(await store.open(info.sha256))).equals(content)).toBe(true);
  });

  it("stores the blob for a concurrent put of the same bytes when the put uploading them is aborted", async () => {
    // 64 blocks: the first put is still uploading when the second one joins its upload.
    const content = randomBytes(4 * 1024 * 1024);
    const address = sha256(content);
    const blob = made.container.getBlockBlobClient(`packages/feed/blobs/${address}`);
    const controller = new AbortController();
    const first = store.put(Readable.from([content]), { signal: controller.signal });
    first.catch(() => {}); // awaited below
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* afterFirstStarts() {
      yield content.subarray(0, 1000);
      await released;
      yield content.subarray(1000);
    }
    let joining = false;
    const second = store.put(afterFirstStarts(), {
      beforePublish: async () => {
        joining = true;
      },
    });
    try {
      while (((await blob.getBlockList("uncommitted").catch(() => undefined))?.uncommittedBlocks?.length ?? 0) < 1) {
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    } finally {
      release();
    }
    while (!joining) await new Promise((resolve) => setTimeout(resolve, 1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort(new Error("interrupted"));
    await expect(first).rejects.toThrow("interrupted");
    expect((await second).sha256).toBe(address);
    expect((await readAll(await store.open(address))).equals(content)).toBe(true);
    expect(await filesUnder(made.tempDir)).toEqual([]);
  });

  it("stores every one of eight concurrent puts of the same new bytes, round after round", async () => {
    // A put ending deletes the spool copy it was the last to hold; a put of the same bytes that
    // comes meanwhile must not take that copy for its own (it read a deleted file: a 500 on CI).
    for (let round = 0; round < 40; round++) {
      const content = randomBytes(300);
      // Staggered, so that some start as others end.
      const puts = await Promise.allSettled(
        Array.from({ length: 8 }, async (_, i) => {
          await new Promise((resolve) => setTimeout(resolve, i * 3));
          return store.put(Readable.from([content]));
        }),
      );
      expect(
        puts.map((put) => (put.status === "fulfilled" ? put.value.sha256 : String(put.reason))),
        `round ${round}`,
      ).toEqual(Array.from({ length: 8 }, () => sha256(content)));
      expect((await readAll(await store.open(sha256(content)))).equals(content)).toBe(true);
    }
    expect(await filesUnder(made.tempDir)).toEqual([]);
  });

  it("ignores other blobs in the container and outside its TargetPath", async () => {
    const info = await store.put(Readable.from([randomBytes(100)]));
    for (const name of ["packages/feed/blobs/readme.txt", `other/blobs/${sha256(randomBytes(5))}`]) {
      await made.container.getBlockBlobClient(name).upload("x", 1);
    }
    const listed: string[] = [];
    for await (const name of store.list()) listed.push(name);
    expect(listed).toEqual([info.sha256]);
    expect(await store.totalBytes()).toBe(100);
  });
});

/** A store of the test's container (64 KiB blocks) that reaches azurite through the proxy on `port`. */
function storeThrough(port: number, containerName: string, tempDir: string) {
  return createAzureBlobStore({
    connectionString: azurite.connectionString().replace(`:${azurite.port}/`, `:${port}/`),
    containerName,
    targetPath: "packages/feed",
    tempDir,
    blockBytes: 64 * 1024,
  });
}

type Corruption = "second block" | "put blob";

function flipFirstByte(body: Buffer) {
  if (body.length > 0) body[0] = (body[0] ?? 0) ^ 0xff;
}

/**
 * A reverse proxy to azurite that records each request (method, URL, condition and MD5 headers,
 * answer's status) and each Put Block's Content-MD5, and flips one byte in the body of the second
 * block or of every Put Blob, as asked (same length, so the signature, which does not cover the
 * body, holds).
 */
async function corruptingProxy(targetPort: number, corrupt?: Corruption) {
  const blockMd5s: Array<string | undefined> = [];
  const methods: string[] = [];
  const requests: Array<{
    method: string;
    url: string;
    ifNoneMatch: string | undefined;
    blobContentMd5: string | undefined;
    contentType: string | undefined;
    status?: number;
  }> = [];
  const server: Server = createServer((req, res) => {
    methods.push(req.method ?? "");
    const seen: (typeof requests)[number] = {
      method: req.method ?? "",
      url: req.url ?? "",
      ifNoneMatch: req.headers["if-none-match"],
      blobContentMd5: req.headers["x-ms-blob-content-md5"] as string | undefined,
      contentType: req.headers["x-ms-blob-content-type"] as string | undefined,
    };
    requests.push(seen);
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.method === "PUT" && req.url?.includes("comp=block&")) {
        blockMd5s.push(req.headers["content-md5"] as string | undefined);
        if (corrupt === "second block" && blockMd5s.length === 2) flipFirstByte(body);
      }
      if (corrupt === "put blob" && req.method === "PUT" && req.headers["x-ms-blob-type"] === "BlockBlob") {
        flipFirstByte(body);
      }
      const upstream = request(
        { host: "127.0.0.1", port: targetPort, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          seen.status = answer.statusCode;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port, blockMd5s, methods, requests };
}
