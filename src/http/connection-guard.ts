import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Counter, Gauge, type Metric } from "prom-client";

/** Why a connection was closed by the server rather than by its client (`wharf_http_connections_cut_total`). */
export const CUT_REASONS = [
  /** Its request's headers (or its first byte) did not arrive in time. */
  "header_timeout",
  /** Nothing of an expected body arrived for the stall timeout. */
  "body_idle",
  /** The client read nothing of its answer for the stall timeout. */
  "send_stalled",
  /** Idle between requests for the keep-alive timeout. */
  "keepalive",
  /** A body that may carry the sender's key did not arrive whole in time (pre-auth-body.ts). */
  "pre_auth_body_timeout",
  /** Refused on arrival: its address already had as many connections open. */
  "per_address_limit",
  /** Refused on arrival: the server already had as many open, and none could be shed. */
  "total_limit",
  /** Idle between requests, closed to make room for a new connection. */
  "shed_idle",
  /** Of an unknown sender and still waiting for its headers or body, closed to make room. */
  "shed_anonymous",
] as const;
export type CutReason = (typeof CUT_REASONS)[number];

export interface ConnectionLimits {
  /** Connections open at once. */
  readonly max: number;
  /** Connections open at once from one client (see `clientOf`). */
  readonly maxPerAddress: number;
  /** What counts as one client, by its address (an IPv6 /64 is one); by default each address. */
  readonly clientOf?: (address: string) => string;
  /** Addresses not capped per address: a reverse proxy carries many clients on its connections. */
  readonly unlimitedAddress?: (address: string) => boolean;
}

/**
 * Keeps a server's connections within bounds and classifies its idle-socket timeouts, so that
 * no client can hold descriptors the others need.
 *
 * A new connection over a bound first makes room: an idle keep-alive connection is closed (of
 * its own address when that address is at its cap), else, for the total cap, a connection of a
 * sender not yet known that still waits for its headers or body, from the busiest address
 * among the oldest such. When nothing can be shed, the new connection is closed unread.
 * Connections whose sender has authenticated, and connections being answered, are never shed.
 *
 * The socket timeout (`server.timeout`, re-armed by Node between requests) fires after that long
 * without a byte in either direction; it cuts the connection only when the client is the one
 * stalling: no byte of its headers or of a body it announced, or none of its answer read. A body
 * the server itself has not read yet, or an answer still being worked on, is not the client's stall.
 */
export interface ConnectionGuard {
  attach(server: Server): void;
  /** The request's sender proved who it is: its connection is no longer shed to make room. */
  identified(request: IncomingMessage): void;
  /** Closes the connection at once, counting why (once per connection). */
  cut(socket: Socket, reason: CutReason): void;
  /** `wharf_http_connections_cut_total{reason}` and `wharf_http_connections_open{state}`, for /metrics. */
  readonly metrics: readonly Metric[];
}

type ConnectionState = "idle" | "waiting" | "receiving" | "answering";

interface Connection {
  readonly socket: Socket;
  /** The client it counts for (`clientOf` its address). */
  readonly address: string;
  /** The request being received or answered; undefined between requests. */
  request: IncomingMessage | undefined;
  /** Whether the current request's sender authenticated. */
  identified: boolean;
  /** Answers finished on this connection. */
  answered: number;
  /** socket.bytesRead when the last answer finished: more means the next request has begun. */
  bytesReadWhenIdle: number;
}

/** How many of the oldest waiting connections are compared to find the busiest address: bounded work per arrival. */
const SHED_SCAN = 32;

export function createConnectionGuard(limits: ConnectionLimits): ConnectionGuard {
  const connections = new Map<Socket, Connection>();
  const byAddress = new Map<string, Set<Connection>>();
  // Candidates for shedding, oldest first; checked when taken, since a connection's phase moves on without telling.
  const idle = new Set<Connection>();
  const waiting = new Set<Connection>();

  const cuts = new Counter({
    name: "wharf_http_connections_cut_total",
    help: "Connections closed by the server: timeouts of stalled or idle clients, refusals and sheds over the connection bounds",
    labelNames: ["reason"] as const,
    registers: [],
  });
  for (const reason of CUT_REASONS) cuts.inc({ reason }, 0);
  const isIdle = (c: Connection) =>
    c.request === undefined && c.answered > 0 && c.socket.bytesRead === c.bytesReadWhenIdle;
  const isWaiting = (c: Connection) => (c.request === undefined ? !isIdle(c) : !c.request.complete && !c.identified);
  const stateOf = (c: Connection): ConnectionState =>
    isIdle(c) ? "idle" : isWaiting(c) ? "waiting" : c.request?.complete === false ? "receiving" : "answering";

  const open = new Gauge({
    name: "wharf_http_connections_open",
    help: "Client connections open, by state: idle (between requests), waiting (unknown sender, headers or body to come), receiving (authenticated sender, body to come), answering",
    labelNames: ["state"] as const,
    registers: [],
    collect() {
      const counts: Record<ConnectionState, number> = { idle: 0, waiting: 0, receiving: 0, answering: 0 };
      for (const c of connections.values()) counts[stateOf(c)]++;
      for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
    },
  });

  function forget(c: Connection): void {
    if (connections.get(c.socket) !== c) return;
    connections.delete(c.socket);
    idle.delete(c);
    waiting.delete(c);
    const peers = byAddress.get(c.address);
    peers?.delete(c);
    if (peers?.size === 0) byAddress.delete(c.address);
  }

  function cutConnection(c: Connection | undefined, socket: Socket, reason: CutReason): void {
    // Forgotten now, not at 'close' (next tick), so that the room it leaves is counted at once.
    if (c !== undefined && connections.get(socket) === c) {
      forget(c);
      cuts.inc({ reason });
    }
    socket.destroy();
  }

  function oldestIdle(): Connection | undefined {
    for (const c of idle) {
      if (isIdle(c)) return c;
      // Its next request has begun: it waits for headers now.
      idle.delete(c);
      waiting.add(c);
    }
    return undefined;
  }

  function firstIdle(peers: Set<Connection>): Connection | undefined {
    for (const c of peers) if (isIdle(c)) return c;
    return undefined;
  }

  function busiestWaiting(): Connection | undefined {
    let best: Connection | undefined;
    let scanned = 0;
    for (const c of waiting) {
      if (!isWaiting(c)) {
        waiting.delete(c);
        continue;
      }
      if (best === undefined || (byAddress.get(c.address)?.size ?? 0) > (byAddress.get(best.address)?.size ?? 0)) {
        best = c;
      }
      if (++scanned >= SHED_SCAN) break;
    }
    return best;
  }

  function admit(socket: Socket): void {
    const remote = socket.remoteAddress ?? "";
    const address = limits.clientOf?.(remote) ?? remote;
    const peers = byAddress.get(address);
    if (peers !== undefined && peers.size >= limits.maxPerAddress && limits.unlimitedAddress?.(remote) !== true) {
      const victim = firstIdle(peers);
      if (victim === undefined) return void refuse(socket, "per_address_limit");
      cutConnection(victim, victim.socket, "shed_idle");
    }
    if (connections.size >= limits.max) {
      const victim = oldestIdle() ?? busiestWaiting();
      if (victim === undefined) return void refuse(socket, "total_limit");
      cutConnection(victim, victim.socket, isIdle(victim) ? "shed_idle" : "shed_anonymous");
    }
    const c: Connection = { socket, address, request: undefined, identified: false, answered: 0, bytesReadWhenIdle: 0 };
    connections.set(socket, c);
    waiting.add(c);
    let group = byAddress.get(address);
    if (group === undefined) byAddress.set(address, (group = new Set()));
    group.add(c);
    socket.once("close", () => forget(c));
  }

  function refuse(socket: Socket, reason: CutReason): void {
    cuts.inc({ reason });
    // Nothing is read or written: an answer would cost what the bound is there to save.
    socket.destroy();
  }

  function onRequest(request: IncomingMessage, response: ServerResponse): void {
    const c = connections.get(request.socket);
    if (c === undefined) return;
    c.request = request;
    c.identified = false;
    idle.delete(c);
    waiting.delete(c);
    if (request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0) {
      waiting.add(c);
    }
    response.once("finish", () => {
      if (c.request !== request) return;
      c.request = undefined;
      c.answered++;
      c.bytesReadWhenIdle = c.socket.bytesRead;
      waiting.delete(c);
      if (connections.get(c.socket) === c) idle.add(c);
    });
  }

  function onTimeout(socket: Socket): void {
    const c = connections.get(socket);
    const request = c?.request;
    if (c === undefined) return void socket.destroy();
    if (request === undefined) return cutConnection(c, socket, isIdle(c) ? "keepalive" : "header_timeout");
    if (!request.complete) {
      // Unread bytes are waiting for the server, not the other way round.
      if (request.readableLength === 0) cutConnection(c, socket, "body_idle");
      return;
    }
    if (socket.writableLength > 0) cutConnection(c, socket, "send_stalled");
    // Otherwise the answer is still being worked on: the server's time, not the client's stall.
  }

  function onClientError(error: NodeJS.ErrnoException, socket: Socket): void {
    if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
      const c = connections.get(socket);
      if (c !== undefined) {
        forget(c);
        cuts.inc({ reason: "header_timeout" });
      }
    }
    // The error handler answers and ends; a client that never closes its side must not keep the descriptor.
    socket.once("finish", () => socket.destroy());
  }

  return {
    attach(server) {
      server.on("connection", admit);
      server.prependListener("request", onRequest);
      server.on("timeout", onTimeout);
      server.prependListener("clientError", onClientError);
    },
    identified(request) {
      const c = connections.get(request.socket);
      if (c === undefined || c.request !== request) return;
      c.identified = true;
      waiting.delete(c);
    },
    cut(socket, reason) {
      cutConnection(connections.get(socket), socket, reason);
    },
    metrics: [cuts, open],
  };
}
