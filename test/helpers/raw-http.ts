import net from "node:net";

export interface RawResponse {
  readonly status: number;
  /** The status line and headers, as sent. */
  readonly headers: string;
  readonly body: string;
}

/**
 * Sends request bytes exactly as given over a real socket (nothing normalises the URL, unlike
 * inject) and resolves with the answer. The request must say `Connection: close`: it is written,
 * not ended (a client's FIN makes Node abort requests still in progress), and the server closes
 * once it has answered.
 */
export function rawRequest(port: number, request: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const split = text.indexOf("\r\n\r\n");
      const headers = split < 0 ? text : text.slice(0, split);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1] ?? 0),
        headers,
        body: text.slice(split + 4),
      });
    });
  });
}

/** A header's value in a raw response, case-insensitively. */
export const rawHeader = (headers: string, name: string) =>
  new RegExp(`\\r\\n${name}: ([^\\r]*)`, "i").exec(headers)?.[1];
