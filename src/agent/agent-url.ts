import { isIP } from "node:net";

/**
 * The Wharf URL an agent may talk to: HTTPS, or plain HTTP to this machine only. The agent key and
 * the desired configuration (sensitive files included) must not cross a network unencrypted.
 * Returns the parsed URL or throws an Error whose message says what to do.
 */
export function parseAgentServerUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`--server: '${text}' is not a URL (e.g. https://wharf.example.com)`);
  }
  if (url.protocol === "https:") return url;
  if (url.protocol !== "http:") throw new Error(`--server: ${url.protocol} is not supported; use https://`);
  if (!isLoopback(url.hostname)) {
    throw new Error(
      `--server: refusing plain http:// to ${url.hostname}: the agent key and the desired configuration would cross ` +
        "the network unencrypted. Use https:// (plain http:// is allowed to this machine only: localhost, 127.0.0.1, [::1]).",
    );
  }
  return url;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  if (isIP(host) === 6) return host === "::1" || host === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(host);
  return false;
}
