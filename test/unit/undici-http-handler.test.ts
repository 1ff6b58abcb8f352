import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterEach, describe, expect, it } from "vitest";
import { objectStoreError } from "../../src/storage/s3-errors.js";
import { UndiciHttpHandler } from "../../src/storage/undici-http-handler.js";

/**
 * The SDK's requests carried by undici (storage/undici-http-handler.ts), against a loopback server
 * that records what arrives: the signed path and query as the SDK built them, the body, no
 * `Expect`, and undici's connection failures named as node:http's so that they read as an outage.
 * The whole S3 contract runs through it against Swift (test/contract/s3-blob-store.test.ts).
 */
interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: Buffer;
}

let server: Server | undefined;
let client: S3Client | undefined;

afterEach(async () => {
  client?.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  client = undefined;
});

async function serve(answer: (seen: Seen, respond: (status: number, body: string) => void) => void) {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const one = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(one);
      answer(one, (status, body) => res.writeHead(status, { "content-type": "application/xml" }).end(body));
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  client = clientFor((server.address() as AddressInfo).port);
  return { seen, client };
}

/** An SDK client on the handler, for a server on this loopback port; one attempt, so failures show as they are. */
const clientFor = (port: number) =>
  new S3Client({
    region: "us-east-1",
    endpoint: `http://127.0.0.1:${port}`,
    forcePathStyle: true,
    credentials: { accessKeyId: "id", secretAccessKey: "secret" },
    requestHandler: new UndiciHttpHandler(),
    maxAttempts: 1,
  });

describe("UndiciHttpHandler", () => {
  it("sends the path, query, headers and body the SDK signed, without Expect, and hands back the answer", async () => {
    const { seen, client } = await serve((one, respond) =>
      one.method === "GET"
        ? respond(
            200,
            `<ListBucketResult><Name>b</Name><KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>` +
              `<Contents><Key>a b/c+d</Key><Size>5</Size></Contents></ListBucketResult>`,
          )
        : respond(200, ""),
    );
    const listed = await client.send(
      new ListObjectsV2Command({ Bucket: "b", Prefix: "a b/", ContinuationToken: "t=1&x/y!'()*" }),
    );
    expect(listed.Contents).toEqual([expect.objectContaining({ Key: "a b/c+d", Size: 5 })]);
    const body = Buffer.alloc(3 * 1024 * 1024, 7);
    await client.send(new PutObjectCommand({ Bucket: "b", Key: "k/x y", Body: body, ContentLength: body.length }));

    const [list, put] = seen;
    expect(list?.method).toBe("GET");
    // Every reserved character of the values escaped, as the signature's canonical query has them.
    expect(list?.url).toContain("continuation-token=t%3D1%26x%2Fy%21%27%28%29%2A");
    expect(list?.url).toContain("prefix=a%20b%2F");
    expect(list?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(put?.method).toBe("PUT");
    expect(put?.url).toBe("/b/k/x%20y?x-id=PutObject");
    expect(put?.headers.expect).toBeUndefined();
    expect(put?.headers["content-length"]).toBe(String(body.length));
    expect(put?.body.equals(body)).toBe(true);
  });

  it("names a connection cut before the answer ECONNRESET, which reads as a store that did not answer", async () => {
    const { client } = await serve(() => server?.closeAllConnections());
    const failure = await client.send(new ListObjectsV2Command({ Bucket: "b" })).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "ECONNRESET" });
    expect(objectStoreError("list blobs", "here", failure)).toMatchObject({
      kind: "unavailable",
      code: "OBJECT_STORE_UNREACHABLE",
    });
  });

  it("names a refused connection as node:http does, and stops at the caller's abort", async () => {
    const { client } = await serve((_one, respond) => setTimeout(() => respond(200, ""), 5_000));
    const controller = new AbortController();
    const pending = client
      .send(new ListObjectsV2Command({ Bucket: "b" }), { abortSignal: controller.signal })
      .catch((error: unknown) => error);
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toMatchObject({ name: "AbortError" });

    const { port } = server?.address() as AddressInfo;
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server?.closeAllConnections();
    server = undefined;
    const refused = clientFor(port);
    const failure = await refused.send(new ListObjectsV2Command({ Bucket: "b" })).catch((error: unknown) => error);
    refused.destroy();
    expect(objectStoreError("list blobs", "here", failure)).toMatchObject({ code: "OBJECT_STORE_UNREACHABLE" });
  });
});
