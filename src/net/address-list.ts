import { BlockList, isIP } from "node:net";

/**
 * Whether an address is one of `entries` (addresses or CIDR ranges, as config.ts validates them).
 * BlockList matches an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, what a dual-stack socket
 * reports) against the IPv4 entries too.
 */
export function addressListMatcher(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = "", prefix] = entry.split("/");
    if (prefix === undefined) list.addAddress(address, familyOf(address));
    else list.addSubnet(address, Number(prefix), familyOf(address));
  }
  return (address) => isIP(address) !== 0 && list.check(address, familyOf(address));
}

const familyOf = (address: string) => (isIP(address) === 6 ? "ipv6" : "ipv4");
