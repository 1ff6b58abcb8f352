import { afterEach, describe, expect, it, vi } from "vitest";
import { createAddressThrottle } from "../../src/areas/security/address-throttle.js";
import { addressKey } from "../../src/net/address-key.js";
import { createPasswordVerifier } from "../../src/areas/security/password-verifier.js";
import { UNMATCHABLE_HASH } from "../../src/areas/security/passwords.js";
import { createUserBackoff } from "../../src/areas/security/user-backoff.js";
import { DomainError } from "../../src/domain/errors.js";
import { manualClock } from "../helpers/clock.js";

describe("client addresses", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:0DB8:0001:0002::9", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::ffff:1.2.3.4", "2001:db8:1:2::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    [undefined, "unknown"],
  ])("counts %s as %s", (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});

describe("address throttle", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("blocks after the failures of one window, twice as long each time within a day, up to the cap", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const throttle = createAddressThrottle({ failures: 3, windowSeconds: 60, maxBlockSeconds: 300 });
    const blocks: number[] = [];
    for (let round = 0; round < 5; round++) {
      expect(await throttle.failed("198.51.100.1")).toBe(0);
      expect(await throttle.failed("198.51.100.1")).toBe(0);
      blocks.push(await throttle.failed("198.51.100.1"));
    }
    expect(blocks).toEqual([60_000, 120_000, 240_000, 300_000, 300_000]);
    expect(throttle.blockedForMs("198.51.100.1")).toBe(300_000);
    expect(throttle.blockedForMs("198.51.100.2")).toBe(0);
    vi.setSystemTime(Date.now() + 300_000);
    expect(throttle.blockedForMs("198.51.100.1")).toBe(0);
  });

  it("forgets failures older than the window", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const throttle = createAddressThrottle({ failures: 2, windowSeconds: 60, maxBlockSeconds: 300 });
    expect(await throttle.failed("198.51.100.1")).toBe(0);
    vi.setSystemTime(Date.now() + 61_000);
    expect(await throttle.failed("198.51.100.1")).toBe(0);
    expect(await throttle.failed("198.51.100.1")).toBe(60_000);
  });

  it("counts a whole IPv6 /64 as one client", async () => {
    const throttle = createAddressThrottle({ failures: 2, windowSeconds: 60, maxBlockSeconds: 300 });
    await throttle.failed("2001:db8::1");
    await throttle.failed("2001:db8::2");
    expect(throttle.blockedForMs("2001:db8::ffff")).toBeGreaterThan(0);
    expect(throttle.blockedForMs("2001:db8:0:1::1")).toBe(0);
  });
});

describe("user backoff", () => {
  it("lets the free failures pass, then doubles the wait up to the cap, and forgets after a quiet while", () => {
    const time = manualClock();
    const users = createUserBackoff({ freeFailures: 2, maxDelaySeconds: 5, clock: time.clock });
    const waits = Array.from({ length: 7 }, () => users.failed("Alice"));
    expect(waits).toEqual([0, 0, 1000, 2000, 4000, 5000, 5000]);
    expect(users.waitMs("alice", "198.51.100.1")).toBe(5000);
    expect(users.isWaiting("ALICE")).toBe(true);
    time.advance(5000);
    expect(users.waitMs("alice", "198.51.100.1")).toBe(0);
    // Still counted: the next failure waits the longest again...
    expect(users.failed("alice")).toBe(5000);
    // ...until no failure has come for a quarter of an hour.
    time.advance(15 * 60_000 + 1);
    expect(users.failed("alice")).toBe(0);
  });

  it("never makes an address the name signed in from wait, nor names it does not know", () => {
    const time = manualClock();
    const users = createUserBackoff({ freeFailures: 0, maxDelaySeconds: 300, clock: time.clock });
    users.succeeded("alice", "198.51.100.1");
    users.failed("alice");
    expect(users.waitMs("alice", "198.51.100.1")).toBe(0);
    expect(users.waitMs("alice", "198.51.100.2")).toBe(1000);
    expect(users.waitMs("bob", "198.51.100.2")).toBe(0);
    // Known for 30 days.
    time.advance(30 * 24 * 3600_000);
    users.failed("alice");
    expect(users.waitMs("alice", "198.51.100.1")).toBeGreaterThan(0);
  });
});

describe("password verifier", () => {
  function gatedCheck() {
    const pending: { stored: string; finish: (matches: boolean) => void }[] = [];
    let running = 0;
    let most = 0;
    const check = (_password: string, stored: string) =>
      new Promise<boolean>((resolve) => {
        running++;
        most = Math.max(most, running);
        pending.push({
          stored,
          finish: (matches) => {
            running--;
            resolve(matches);
          },
        });
      });
    return { check, pending, most: () => most };
  }

  it("runs at most `concurrency` checks, queues `queueLimit`, and refuses the rest with 503 and Retry-After", async () => {
    const gate = gatedCheck();
    const verifier = createPasswordVerifier({ concurrency: 2, queueLimit: 2, check: gate.check });
    const results = Array.from({ length: 6 }, () =>
      verifier.verify("guess", "stored").then(
        (matches) => ({ matches }),
        (error: unknown) => ({ error }),
      ),
    );
    await vi.waitFor(() => expect(gate.pending).toHaveLength(2));
    const refused = await Promise.all(results.slice(4));
    for (const outcome of refused) {
      expect(outcome).toHaveProperty("error");
      const error = (outcome as { error: DomainError }).error;
      expect(error).toBeInstanceOf(DomainError);
      expect([error.kind, error.code, error.retryAfterSeconds]).toEqual(["unavailable", "SIGN_IN_BUSY", 1]);
    }
    for (let finished = 0; finished < 4; finished++) {
      await vi.waitFor(() => expect(gate.pending.length).toBeGreaterThan(finished));
      gate.pending[finished]?.finish(finished === 0);
    }
    expect(await Promise.all(results.slice(0, 4))).toEqual([
      { matches: true },
      { matches: false },
      { matches: false },
      { matches: false },
    ]);
    expect(gate.most()).toBe(2);
  });

  it("checks a sign-in without a stored hash against an unmatchable one, and never lets it match", async () => {
    const gate = gatedCheck();
    const verifier = createPasswordVerifier({ concurrency: 1, queueLimit: 0, check: gate.check });
    const unknown = verifier.verify("guess", undefined);
    await vi.waitFor(() => expect(gate.pending).toHaveLength(1));
    expect(gate.pending[0]?.stored).toBe(UNMATCHABLE_HASH);
    gate.pending[0]?.finish(true);
    expect(await unknown).toBe(false);
  });
});
