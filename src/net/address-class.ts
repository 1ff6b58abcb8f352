import { isIP } from "node:net";

/**
 * What an IP address is, as far as a server-side fetch cares. Only `public` is always reachable;
 * `private` and `loopback` are reachable when an administrator allows them; everything else is
 * never fetched from (docs/PRODUCT.md, "Security baseline").
 *
 * The tables below follow the IANA special-purpose registries (IPv4 and IPv6), "globally reachable"
 * column, plus the cloud metadata endpoints known to sit outside link-local space.
 */
export type AddressCategory =
  | "public"
  | "private"
  | "loopback"
  | "link_local"
  | "metadata"
  | "unspecified"
  | "multicast"
  | "broadcast"
  | "reserved";

export interface AddressPolicy {
  readonly allowPrivate: boolean;
  readonly allowLoopback: boolean;
}

/** Whether a fetch may connect to an address of this category under the given policy. */
export function isCategoryAllowed(category: AddressCategory, policy: AddressPolicy): boolean {
  if (category === "public") return true;
  if (category === "private") return policy.allowPrivate;
  if (category === "loopback") return policy.allowLoopback;
  return false;
}

/** Categories no administrator setting can open: the message says so, to stop a futile search. */
export function isAlwaysRefused(category: AddressCategory): boolean {
  return category !== "public" && category !== "private" && category !== "loopback";
}

const DESCRIPTIONS: Record<AddressCategory, string> = {
  public: "a public address",
  private: "a private address",
  loopback: "a loopback address",
  link_local: "a link-local address",
  metadata: "a cloud metadata address",
  unspecified: "an unspecified address",
  multicast: "a multicast address",
  broadcast: "a broadcast address",
  reserved: "a reserved address",
};

export function describeCategory(category: AddressCategory): string {
  return DESCRIPTIONS[category];
}

/**
 * Some IPv6 ranges carry an IPv4 address a gateway or the kernel will actually connect to
 * (v4-mapped, NAT64, 6to4): the embedded address decides, so `::ffff:169.254.169.254` is as refused
 * as `169.254.169.254`. `shift` is where the 32 embedded bits start; `base` applies when the
 * embedded address is public.
 */
interface Embedded {
  readonly shift: bigint;
  readonly base: AddressCategory;
}

interface Rule {
  readonly network: bigint;
  readonly bits: number;
  readonly category: AddressCategory | Embedded;
}

type RuleSource = readonly [network: string, bits: number, category: AddressCategory | Embedded];

// First match wins, so the more specific entries come first.
const IPV4_RULES: readonly RuleSource[] = [
  ["255.255.255.255", 32, "broadcast"],
  ["169.254.169.254", 32, "metadata"], // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack
  ["100.100.100.200", 32, "metadata"], // Alibaba Cloud, inside the CGNAT range
  ["168.63.129.16", 32, "metadata"], // Azure WireServer: a public address only the host answers
  ["0.0.0.0", 8, "unspecified"], // "this network": Linux connects 0.0.0.0 to the local host
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "private"], // shared address space (CGNAT), often internal in clouds
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link_local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"], // IETF protocol assignments
  ["192.0.2.0", 24, "reserved"], // documentation
  ["192.88.99.0", 24, "reserved"], // deprecated 6to4 relay anycast
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"], // benchmarking
  ["198.51.100.0", 24, "reserved"], // documentation
  ["203.0.113.0", 24, "reserved"], // documentation
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
  ["0.0.0.0", 0, "public"],
];

const IPV6_RULES: readonly RuleSource[] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::ffff:0:0", 96, { shift: 0n, base: "public" }], // IPv4-mapped
  ["::", 96, "reserved"], // deprecated IPv4-compatible
  ["::ffff:0:0:0", 96, "reserved"], // SIIT IPv4-translated
  ["64:ff9b::", 96, { shift: 0n, base: "public" }], // NAT64 well-known prefix
  ["64:ff9b:1::", 48, { shift: 0n, base: "private" }], // local-use NAT64
  ["100::", 64, "reserved"], // discard-only
  ["2001:db8::", 32, "reserved"], // documentation
  ["2001::", 23, "reserved"], // IETF protocol assignments, Teredo among them
  ["2002::", 16, { shift: 80n, base: "public" }], // 6to4
  ["3fff::", 20, "reserved"], // documentation
  ["fd00:ec2::", 32, "metadata"], // AWS instance services (IMDS at fd00:ec2::254, DNS, NTP)
  ["fc00::", 7, "private"], // unique local
  ["fe80::", 10, "link_local"],
  ["fec0::", 10, "private"], // deprecated site-local
  ["ff00::", 8, "multicast"],
  ["2000::", 3, "public"], // global unicast: the only IPv6 space that can be public
  ["::", 0, "reserved"],
];

function compile(rules: readonly RuleSource[], parse: (text: string) => bigint | undefined): Rule[] {
  return rules.map(([text, bits, category]) => {
    const network = parse(text);
    if (network === undefined) throw new Error(`bad network in address table: ${text}`);
    return { network, bits, category };
  });
}

function parseIPv4(text: string): bigint | undefined {
  if (isIP(text) !== 4) return undefined;
  return text.split(".").reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

/** An IPv6 address (no zone) as a 128-bit number; undefined for anything else. */
export function parseIPv6(text: string): bigint | undefined {
  if (isIP(text) !== 6 || text.includes("%")) return undefined;
  let normalised = text;
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    // A dotted IPv4 tail is two 16-bit groups.
    const v4 = parseIPv4(tail);
    if (v4 === undefined) return undefined;
    normalised = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [left = "", right] = normalised.split("::");
  const head = left === "" ? [] : left.split(":");
  const rest = right === undefined || right === "" ? [] : right.split(":");
  const zeros = right === undefined ? [] : new Array<string>(8 - head.length - rest.length).fill("0");
  const groups = [...head, ...zeros, ...rest];
  if (groups.length !== 8) return undefined;
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

const V4 = compile(IPV4_RULES, parseIPv4);
const V6 = compile(IPV6_RULES, parseIPv6);

function match(value: bigint, width: bigint, rules: readonly Rule[]): AddressCategory {
  for (const rule of rules) {
    const shift = width - BigInt(rule.bits);
    if (value >> shift !== rule.network >> shift) continue;
    if (typeof rule.category === "string") return rule.category;
    const embedded = match((value >> rule.category.shift) & 0xffffffffn, 32n, V4);
    return embedded === "public" ? rule.category.base : embedded;
  }
  return "reserved";
}

/**
 * Classifies an IP address in canonical text form (what `dns.lookup` returns, or a WHATWG URL
 * hostname without brackets). Anything that is not an IP literal is `reserved`, i.e. refused: a
 * caller that cannot name an address cannot be allowed to connect to it. A scoped IPv6 address
 * (`fe80::1%eth0`) is `link_local`: only link-local and site-local addresses carry a zone.
 */
export function classifyAddress(address: string): AddressCategory {
  const v4 = parseIPv4(address);
  if (v4 !== undefined) return match(v4, 32n, V4);
  if (address.includes("%") && isIP(address) === 6) return "link_local";
  const v6 = parseIPv6(address);
  if (v6 !== undefined) return match(v6, 128n, V6);
  return "reserved";
}
