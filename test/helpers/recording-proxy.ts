import { createHash } from "node:crypto";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP proxy in front of an S3 server (Swift) that records each request: its method and URL,
 * its digest headers and the digests of its body. Host headers pass unchanged, so signatures hold.
 */
export async function startRecordingProxy(target: string) {
  const requests: Array<{
    method: string;
    url: string;
    contentMd5: string | undefined;
    bodyMd5: string;
    contentSha256: string | undefined;
    bodySha256: string;
  }> = [];
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const hash = createHash("md5");
    const sha256 = createHash("sha256");
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    req.on("data", (chunk: Buffer) => {
      hash.update(chunk);
      sha256.update(chunk);
    });
    req.on("end", () => {
      requests.push({
        method: req.method ?? "",
        url: req.url ?? "",
        contentMd5: req.headers["content-md5"] as string | undefined,
        bodyMd5: hash.digest("base64"),
        contentSha256: req.headers["x-amz-content-sha256"] as string | undefined,
        bodySha256: sha256.digest("hex"),
      });
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
