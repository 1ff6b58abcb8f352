import fs from "node:fs";
import http from "node:http";
import path from "node:path";

/**
 * The baseline the upack download scenarios are compared with (issue "speed"): a minimal Node
 * `http` server, run as its own process, that streams a file from disk per request with
 * `fs.createReadStream({ start, end })`. Nothing else: no routing framework, no authentication,
 * no database, no logging. Files are immutable for the run, so a file's size is read once (the
 * explicit end needs it); every request then opens, reads and closes the file.
 *
 * - `GET /file/<name>`: `<dir>/<name>` streamed from disk (the baseline).
 * - `GET /memory/<name>`: the same bytes from memory, read once (the ceiling the issue quotes).
 *
 * Usage: `node --import tsx bench/upack-baseline-server.ts <dir>`; prints `{"port": n}` once listening
 * on 127.0.0.1.
 */

const dir = process.argv[2];
if (dir === undefined) throw new Error("usage: upack-baseline-server.ts <dir>");
const sizes = new Map<string, number>();
const contents = new Map<string, Buffer>();

function fail(res: http.ServerResponse, status: number) {
  res.writeHead(status, { "Content-Type": "text/plain", "Content-Length": "0" });
  res.end();
}

const server = http.createServer((req, res) => {
  const url = req.url ?? "/";
  const slash = url.indexOf("/", 1);
  const route = url.slice(0, slash + 1);
  const name = url.slice(slash + 1);
  if (slash < 0 || name === "" || name.includes("/") || name.includes("..")) return fail(res, 404);
  const file = path.join(dir, name);
  try {
    if (route === "/memory/") {
      let bytes = contents.get(name);
      if (bytes === undefined) {
        bytes = fs.readFileSync(file);
        contents.set(name, bytes);
      }
      res.writeHead(200, { "Content-Type": "application/zip", "Content-Length": String(bytes.length) });
      res.end(bytes);
      return;
    }
    if (route !== "/file/") return fail(res, 404);
    let size = sizes.get(name);
    if (size === undefined) {
      size = fs.statSync(file).size;
      sizes.set(name, size);
    }
    res.writeHead(200, { "Content-Type": "application/zip", "Content-Length": String(size) });
    if (size === 0) return res.end();
    const stream = fs.createReadStream(file, { start: 0, end: size - 1 });
    stream.on("error", () => res.destroy());
    res.on("close", () => stream.destroy());
    stream.pipe(res);
  } catch {
    fail(res, 500);
  }
});

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});
process.once("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
