import { describe, expect, it } from "vitest";
import { type AddressCategory, classifyAddress, isCategoryAllowed } from "../../src/net/address-class.js";
import { type ResolveHost, parseFetchUrl, vetFetchTarget } from "../../src/net/fetch-target.js";
import { createGuardedFetch } from "../../src/net/fetch-guard.js";
import { domainErrorOf } from "../helpers/responses.js";

describe("classifyAddress", () => {
  const cases: [address: string, expected: AddressCategory][] = [
    // public
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["100.63.255.255", "public"], // just below CGNAT
    ["100.128.0.0", "public"], // just above CGNAT
    ["172.15.255.255", "public"],
    ["172.32.0.0", "public"],
    ["192.169.0.1", "public"],
    ["223.255.255.255", "public"],
    ["2606:4700:4700::1111", "public"],
    ["2a00:1450:4001:80b::200e", "public"],
    // private
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["100.127.255.254", "private"],
    ["fc00::1", "private"],
    ["fd12:3456:789a::1", "private"],
    ["fec0::1", "private"],
    // loopback
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    // link-local and metadata: always refused
    ["169.254.0.1", "link_local"],
    ["169.254.255.255", "link_local"],
    ["169.254.169.254", "metadata"],
    ["fe80::1", "link_local"],
    ["febf:ffff::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["fd00:ec2::254", "metadata"],
    ["fd00:ec2::23", "metadata"],
    ["100.100.100.200", "metadata"],
    ["168.63.129.16", "metadata"],
    // unspecified, broadcast, multicast, reserved
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["ff05::2", "multicast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    ["2001:db8::1", "reserved"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"], // Teredo
    ["100::1", "reserved"],
    ["3fff::1", "reserved"],
    ["4000::1", "reserved"], // outside 2000::/3
    ["::7f00:1", "reserved"], // IPv4-compatible ::127.0.0.1
    ["::ffff:0:7f00:1", "reserved"], // SIIT
    // IPv4 inside IPv6: the embedded address decides
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::ffff:a9fe:1", "link_local"],
    ["0:0:0:0:0:ffff:7f00:1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:0.0.0.0", "unspecified"],
    ["::ffff:8.8.8.8", "public"],
    ["64:ff9b::a9fe:a9fe", "metadata"], // NAT64
    ["64:ff9b::8.8.8.8", "public"],
    ["64:ff9b:1::808:808", "private"], // local-use NAT64 with a public inside
    ["64:ff9b:1::a00:1", "private"],
    ["64:ff9b:1::7f00:1", "loopback"],
    ["2002:a9fe:a9fe::1", "metadata"], // 6to4
    ["2002:7f00:1::", "loopback"],
    ["2002:808:808::1", "public"],
    // not IP literals: refused as reserved
    ["example.com", "reserved"],
    ["", "reserved"],
    ["2852039166", "reserved"],
    ["0x7f.1", "reserved"],
    ["[::1]", "reserved"],
  ];
  it.each(cases)("%s is %s", (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it("allows private and loopback only when the policy says so, and nothing else ever", () => {
    const none = { allowPrivate: false, allowLoopback: false };
    const all = { allowPrivate: true, allowLoopback: true };
    expect(isCategoryAllowed("public", none)).toBe(true);
    expect(isCategoryAllowed("private", none)).toBe(false);
    expect(isCategoryAllowed("loopback", none)).toBe(false);
    expect(isCategoryAllowed("private", all)).toBe(true);
    expect(isCategoryAllowed("loopback", all)).toBe(true);
    const never: AddressCategory[] = ["link_local", "metadata", "unspecified", "multicast", "broadcast", "reserved"];
    for (const category of never) expect(isCategoryAllowed(category, all)).toBe(false);
  });
});

const noDns: ResolveHost = () => Promise.reject(new Error("no DNS expected for a literal"));
const strict = { allowPrivate: false, allowLoopback: false };
const lenient = { allowPrivate: true, allowLoopback: true };

describe("literal hosts in URLs are normalised before classification", () => {
  const cases: [url: string, address: string, expected: AddressCategory][] = [
    ["http://2852039166/", "169.254.169.254", "metadata"], // decimal
    ["http://0xa9fea9fe/", "169.254.169.254", "metadata"], // hex
    ["http://0251.0376.0251.0376/", "169.254.169.254", "metadata"], // octal
    ["http://0x7f.1/", "127.0.0.1", "loopback"],
    ["http://127.1/", "127.0.0.1", "loopback"],
    ["http://0177.0.0.1/", "127.0.0.1", "loopback"],
    ["http://%31%32%37.0.0.1/", "127.0.0.1", "loopback"], // percent-encoded
    ["http://１２７.０.０.１/", "127.0.0.1", "loopback"], // full-width digits
    ["http://0/", "0.0.0.0", "unspecified"],
    ["http://10.1/", "10.0.0.1", "private"],
    ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe", "metadata"],
    ["http://[::ffff:7f00:1]:8080/", "::ffff:7f00:1", "loopback"],
    ["http://[0:0:0:0:0:0:0:1]/", "::1", "loopback"],
    ["http://[fe80::1]/", "fe80::1", "link_local"],
    ["http://[FD00:EC2::254]/", "fd00:ec2::254", "metadata"],
  ];
  it.each(cases)("%s -> %s (%s)", async (raw, address, category) => {
    const url = parseFetchUrl(raw, undefined, 0);
    expect(classifyAddress(address)).toBe(category);
    const error = await domainErrorOf(vetFetchTarget(url, 0, strict, noDns));
    expect(error.code).toBe("FETCH_ADDRESS_REFUSED");
    expect(error.kind).toBe("invalid");
  });

  it("connects to the literal itself, without DNS, when it is allowed", async () => {
    const target = await vetFetchTarget(parseFetchUrl("http://[::1]:81/x", undefined, 0), 0, lenient, noDns);
    expect(target).toMatchObject({ hostname: "::1", address: "::1", family: 6 });
  });
});

describe("parseFetchUrl", () => {
  it.each(["ftp://example.com/a", "file:///etc/passwd", "gopher://example.com/", "data:,x", "javascript:alert(1)"])(
    "refuses %s",
    (raw) => {
      expect(() => parseFetchUrl(raw, undefined, 0)).toThrow(expect.objectContaining({ code: "FETCH_SCHEME_REFUSED" }));
    },
  );

  it.each(["http://user:pass@example.com/", "https://token@example.com/", "http://:pw@example.com/"])(
    "refuses credentials in %s",
    (raw) => {
      expect(() => parseFetchUrl(raw, undefined, 0)).toThrow(
        expect.objectContaining({ code: "FETCH_CREDENTIALS_REFUSED", kind: "invalid" }),
      );
    },
  );

  it("refuses what is not an absolute URL, and does not echo it", () => {
    expect(() => parseFetchUrl("/relative?key=secret", undefined, 0)).toThrow(
      expect.objectContaining({ code: "FETCH_URL_INVALID", message: expect.not.stringContaining("secret") as string }),
    );
  });

  it("resolves a relative redirect against the current URL", () => {
    const base = new URL("https://example.com/a/b?x=1");
    expect(parseFetchUrl("../c", base, 1).href).toBe("https://example.com/c");
  });
});

describe("vetFetchTarget with names", () => {
  const table: Record<string, string[]> = {
    "public.test": ["8.8.8.8", "2606:4700:4700::1111"],
    "mixed.test": ["8.8.8.8", "10.0.0.1"],
    "mixed-v6.test": ["2606:4700:4700::1111", "fd00::1"],
    "metadata-ip.test": ["169.254.169.254"],
    "mapped.test": ["::ffff:169.254.169.254"],
    "internal.test": ["10.0.0.1"],
    "empty.test": [],
  };
  const resolve: ResolveHost = (hostname) => {
    const addresses = table[hostname];
    if (addresses === undefined) return Promise.reject(Object.assign(new Error("nx"), { code: "ENOTFOUND" }));
    return Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })));
  };
  const vet = (raw: string, policy = strict) => vetFetchTarget(new URL(raw), 0, policy, resolve);

  it("picks the first address of a name whose every address is allowed", async () => {
    expect(await vet("https://public.test/")).toMatchObject({ hostname: "public.test", address: "8.8.8.8", family: 4 });
  });

  it.each(["http://mixed.test/", "http://mixed-v6.test/"])(
    "refuses %s: one private address refuses it",
    async (raw) => {
      const error = await domainErrorOf(vet(raw));
      expect(error.code).toBe("FETCH_ADDRESS_REFUSED");
      expect(error.message).toContain("resolves to a private address");
      // The caller learns the kind of address, not the address.
      expect(error.message).not.toContain("10.0.0.1");
    },
  );

  it("allows a private name once the administrator allows private addresses", async () => {
    expect(await vet("http://internal.test/", lenient)).toMatchObject({ address: "10.0.0.1" });
  });

  it.each(["http://metadata-ip.test/", "http://mapped.test/"])(
    "refuses %s even when everything is allowed",
    async (raw) => {
      const error = await domainErrorOf(vet(raw, lenient));
      expect(error.message).toMatch(/metadata address, which is never allowed/);
    },
  );

  it.each([
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
    "http://metadata/",
    "http://instance-data.ec2.internal/",
  ])("refuses the metadata host name %s without resolving it", async (raw) => {
    const error = await domainErrorOf(vetFetchTarget(new URL(raw), 0, lenient, noDns));
    expect(error.code).toBe("FETCH_ADDRESS_REFUSED");
  });

  it("says an unknown or empty name could not be resolved", async () => {
    expect((await domainErrorOf(vet("http://nowhere.test/"))).code).toBe("FETCH_HOST_NOT_FOUND");
    expect((await domainErrorOf(vet("http://empty.test/"))).code).toBe("FETCH_HOST_NOT_FOUND");
  });

  it("treats other resolver failures as temporary", async () => {
    const failing: ResolveHost = () => Promise.reject(Object.assign(new Error("servfail"), { code: "EAI_AGAIN" }));
    const error = await domainErrorOf(vetFetchTarget(new URL("http://x.test/"), 0, strict, failing));
    expect(error).toMatchObject({ kind: "bad_gateway", code: "FETCH_DNS_FAILED" });
  });

  it("words a refused redirect as a redirect", async () => {
    const error = await domainErrorOf(vetFetchTarget(new URL("http://internal.test/"), 2, strict, resolve));
    expect(error.message).toMatch(/^Refused to follow a redirect to internal\.test: /);
  });
});

describe("createGuardedFetch options", () => {
  const base = { allowPrivate: false, timeoutMs: 1000, maxBytes: 10, maxRedirects: 3 };
  it.each([{ timeoutMs: 0 }, { timeoutMs: Number.NaN }, { maxBytes: -1 }, { maxBytes: 1.5 }, { maxRedirects: -1 }])(
    "refuses %o",
    (override) => {
      expect(() => createGuardedFetch({ ...base, ...override })).toThrow(RangeError);
    },
  );
});
