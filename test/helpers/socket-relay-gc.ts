import net from "node:net";
import { constants, PerformanceObserver } from "node:perf_hooks";
import { collectSocketBuffersYoung } from "../../src/young-buffers.js";

/**
 * Run as its own process (test/unit/young-buffers.test.ts): streams RELAY_MIB MiB over a loopback
 * socket, as a server relaying a large body reads it, and prints how many full and young-generation
 * collections that took, as JSON. With `tuned` on the command line, collectSocketBuffersYoung runs first.
 */
const MiB = 1024 * 1024;
const total = Number(process.env.RELAY_MIB ?? 1024) * MiB;
if (process.argv.includes("tuned")) collectSocketBuffersYoung();

let major = 0;
let minor = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
  }
});

const chunk = Buffer.alloc(MiB, 1);
const server = net.createServer((socket) => {
  let sent = 0;
  const more = () => {
    while (sent < total) {
      sent += chunk.length;
      if (!socket.write(chunk)) return void socket.once("drain", more);
    }
    socket.end();
  };
  more();
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const { port } = server.address() as net.AddressInfo;
observer.observe({ entryTypes: ["gc"] });
let received = 0;
await new Promise<void>((resolve, reject) => {
  net
    .connect(port, "127.0.0.1")
    .on("data", (data: Buffer) => (received += data.length))
    .on("end", resolve)
    .on("error", reject);
});
server.close();
// GC entries are delivered asynchronously: let the last ones arrive.
await new Promise((resolve) => setTimeout(resolve, 50));
observer.disconnect();
process.stdout.write(JSON.stringify({ received, major, minor }));
