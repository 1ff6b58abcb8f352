import { randomBytes, randomInt } from "node:crypto";
import http from "node:http";

/**
 * Hostile requests for bench/fuzz-memory.ts: random paths, feed and directory names, query
 * strings, methods, odd and oversized headers, wrong keys and passwords from many client addresses
 * (X-Forwarded-For, for a server that trusts 127.0.0.1 as its proxy), invalid upload bodies.
 */

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const pick = <T>(items: readonly T[]): T => items[randomInt(items.length)] as T;
const word = (length = randomInt(1, 24)) => randomBytes(length).toString("base64url");
const junk = (length: number) => encodeURIComponent(randomBytes(length).toString("latin1"));
const address = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`;

function query(): string {
  const count = pick([0, 1, 3, 50, 500]);
  const pairs = Array.from({ length: count }, () => `${word(randomInt(1, 8))}=${junk(randomInt(0, 40))}`);
  return pairs.length === 0 ? "" : `?${pairs.join("&")}`;
}

/** A feed or directory name: mostly ones that do not exist, sometimes the real ones. */
const feed = () => pick(["fuzz", "assets", word(), word(60), junk(12), "FUZZ", "fuzz.", "%2e%2e"]);

function randomPath(): string {
  const shapes = [
    () => `/upack/${feed()}/packages${query()}`,
    () => `/upack/${feed()}/versions?name=${word()}&group=${word()}`,
    () => `/upack/${feed()}/download/${word()}/${word()}/${randomInt(9)}.${randomInt(9)}.${randomInt(9)}`,
    () => `/upack/${feed()}/download-file/${word()}/${word()}/1.0.0?path=${junk(20)}`,
    () => `/upack/${feed()}/search?q=${junk(30)}`,
    () => `/api/packages/${feed()}/versions?name=${word()}`,
    () => `/endpoints/${feed()}/content/${word()}/${junk(randomInt(1, 200))}`,
    () => `/endpoints/${feed()}/dir/${word()}${query()}`,
    () => `/endpoints/${feed()}/metadata/${word()}`,
    () => `/api/management/feeds/get/${feed()}`,
    () => `/api/${word()}/${word()}/${junk(40)}`,
    () => `/${junk(randomInt(1, 2000))}`,
    () => `/${Array.from({ length: randomInt(1, 60) }, () => word(4)).join("/")}${query()}`,
    () => `/health${query()}`,
    () => `/metrics${query()}`,
  ];
  return pick(shapes)();
}

function oddHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = randomInt(0, 40); i > 0; i--) headers[`x-${word(8).toLowerCase()}`] = word(randomInt(1, 200));
  if (randomInt(4) === 0) headers["x-long"] = "a".repeat(randomInt(1000, 12_000));
  return headers;
}

function credentials(adminKey: string): Record<string, string> {
  switch (randomInt(5)) {
    case 0:
      return { "x-apikey": adminKey };
    case 1:
      return { "x-apikey": word(32), "x-forwarded-for": address() };
    case 2: {
      const basic = Buffer.from(`${word(12)}:${word(12)}`).toString("base64");
      return { authorization: `Basic ${basic}`, "x-forwarded-for": address() };
    }
    case 3:
      return { authorization: `Bearer ${word(40)}`, "x-forwarded-for": address() };
    default:
      return {};
  }
}

function body(): { body: Buffer; type: string } {
  return pick([
    () => ({ body: Buffer.concat([Buffer.from("PK\u0003\u0004"), randomBytes(200)]), type: "application/zip" }),
    () => ({ body: Buffer.concat([Buffer.from([0x1f, 0x8b]), randomBytes(500)]), type: "application/gzip" }),
    () => ({
      body: Buffer.from(`{"name":"${word()}","version":"${junk(10)}","x":[${"1,".repeat(500)}1]}`),
      type: "application/json",
    }),
    () => ({ body: Buffer.from(`content-b64=${word(300)}&name=${word()}`), type: "application/x-www-form-urlencoded" }),
    () => ({ body: randomBytes(randomInt(0, 20_000)), type: pick(["application/octet-stream", "text/plain", word()]) }),
  ])();
}

/** Real resources (bench/fuzz-memory.ts stores them) under many spellings: what caches keep. */
function realResource(): string {
  return pick([
    () => `/upack/fuzz/packages?count=${randomInt(1, 2000)}${query().replace("?", "&")}`,
    () => `/upack/fuzz/versions?name=pkg-${randomInt(400)}`,
    () => `/upack/${pick(["fuzz", "FUZZ", "Fuzz", "%66uzz"])}/download/pkg-${randomInt(400)}/1.0.0`,
    () => `/endpoints/assets/dir/many?recursive=${pick(["true", "True", "true)", "1", word()])}`,
    () => `/endpoints/assets/content/many/f${randomInt(2000)}.txt`,
  ])();
}

export function hostileRequest(adminKey: string): FuzzRequest {
  if (randomInt(4) === 0) {
    const headers = { ...oddHeaders(), "x-apikey": adminKey, host: pick(["127.0.0.1", word(), `${word()}.example`]) };
    return { method: pick(["GET", "HEAD"]), path: realResource(), headers };
  }
  const headers = { ...oddHeaders(), ...credentials(adminKey) };
  if (randomInt(3) === 0) {
    const { body: bytes, type } = body();
    const target = pick([
      `/upack/${feed()}/upload`,
      `/upack/fuzz/upload?name=${word()}&version=1.0.${randomInt(1000)}`,
      `/api/packages/${feed()}/upload`,
      `/endpoints/${feed()}/content/${word()}.bin`,
      `/endpoints/assets/import/${word()}?format=${pick(["zip", "tgz", word()])}`,
      randomPath(),
    ]);
    return { method: pick(["POST", "PUT"]), path: target, headers: { ...headers, "content-type": type }, body: bytes };
  }
  return { method: pick(["GET", "GET", "GET", "HEAD", "DELETE", "OPTIONS", "PATCH"]), path: randomPath(), headers };
}

export function send(url: string, agent: http.Agent, request: FuzzRequest): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const req = http.request(
      { hostname, port, agent, method: request.method, path: request.path, headers: request.headers, timeout: 30_000 },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", () => resolve(-1));
      },
    );
    req.on("error", () => resolve(-1)); // a connection the server cut: counted, not fatal
    req.on("timeout", () => req.destroy());
    req.end(request.body);
  });
}
