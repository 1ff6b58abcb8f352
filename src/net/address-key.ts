import { isIPv4 } from "node:net";
import { parseIPv6 } from "./address-class.js";

/**
 * What is counted as one client (failed sign-ins, connection bounds): an IPv4 address, or an IPv6
 * /64 (one customer's network: a host there can take any of its 2^64 addresses). An IPv4-mapped
 * IPv6 address is its IPv4 address; a zone (fe80::1%eth0) names the interface, not the host.
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined) return "unknown";
  const mapped = address.toLowerCase().startsWith("::ffff:") ? address.slice(7) : undefined;
  if (mapped !== undefined && isIPv4(mapped)) return mapped;
  const value = parseIPv6(address.split("%")[0] ?? address);
  if (value === undefined) return address;
  const groups = [48n, 32n, 16n, 0n].map((shift) => ((value >> (64n + shift)) & 0xffffn).toString(16));
  return `${groups.join(":")}::/64`;
}
