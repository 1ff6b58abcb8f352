import http, { type IncomingMessage } from "node:http";
import net, { type AddressInfo } from "node:net";

/**
 * A real HTTP proxy on 127.0.0.1 for tests of outbound fetches: it forwards absolute-form requests
 * (`GET http://host:port/path`) and opens CONNECT tunnels, as Squid or any corporate proxy does, and
 * records what it was asked. It connects only to 127.0.0.1, whatever the request names, so that a
 * broken guard can never make it send a packet elsewhere.
 */
export interface TestProxy {
  readonly url: string;
  readonly port: number;
  /** `GET http://...` for forwarded requests, `CONNECT host:port` for tunnels, in arrival order. */
  readonly requests: string[];
  /** The Proxy-Authorization header of each request, in the same order. */
  readonly authorizations: (string | undefined)[];
  /** Client connections accepted. */
  connections: number;
  close(): Promise<void>;
}

export async function startTestProxy(): Promise<TestProxy> {
  const sockets = new Set<net.Socket>();
  const server = http.createServer((request, response) => {
    record(request, `${request.method ?? "?"} ${request.url ?? ""}`);
    let target: URL;
    try {
      target = new URL(request.url ?? "");
    } catch {
      response.writeHead(400).end("absolute-form request expected");
      return;
    }
    const headers = { ...request.headers };
    delete headers["proxy-authorization"];
    delete headers["proxy-connection"];
    const upstream = http.request(
      {
        host: "127.0.0.1",
        port: Number(target.port || 80),
        method: request.method,
        path: `${target.pathname}${target.search}`,
        headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on("error", () => response.writeHead(502).end("upstream failed"));
    request.pipe(upstream);
  });
  server.on("connect", (request: IncomingMessage, client: net.Socket, head: Buffer) => {
    record(request, `CONNECT ${request.url ?? ""}`);
    const port = Number((request.url ?? "").split(":").pop());
    const upstream = net.connect(port, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    sockets.add(upstream);
  });
  server.on("connection", (socket: net.Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;

  function record(request: IncomingMessage, line: string) {
    state.requests.push(line);
    state.authorizations.push(request.headers["proxy-authorization"]);
  }

  const state: TestProxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests: [],
    authorizations: [],
    connections: 0,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      return new Promise((done) => server.close(() => done()));
    },
  };
  return state;
}
