import { describe, expect, it } from "vitest";
import {
  type ConditionalHeaders,
  evaluatePreconditions,
  ifRangeMatches,
  parseEntityTags,
  parseHttpDate,
  parseRange,
  type RangeResult,
  type Validators,
} from "../../src/http/send-blob.js";

const partial = (start: number, end: number): RangeResult => ({ kind: "partial", start, end });
const full = (reason: "absent" | "invalid" | "multiple" | "empty"): RangeResult => ({ kind: "full", reason });
const unsatisfiable: RangeResult = { kind: "unsatisfiable" };

describe("parseRange", () => {
  const cases: Array<[string | undefined, number, RangeResult]> = [
    [undefined, 100, full("absent")],
    ["bytes=0-9", 100, partial(0, 9)],
    ["bytes=10-10", 100, partial(10, 10)],
    ["bytes=90-", 100, partial(90, 99)],
    ["bytes=-10", 100, partial(90, 99)],
    ["bytes=0-999", 100, partial(0, 99)], // last-pos past the end is clamped
    ["bytes=-1000", 100, partial(0, 99)], // suffix longer than the content: all of it
    ["bytes=0-99999999999999999999999", 100, partial(0, 99)],
    ["BYTES=1-2", 100, partial(1, 2)], // the unit is case-insensitive
    ["bytes= 1-2 ", 100, partial(1, 2)],
    ["bytes=1-2,", 100, partial(1, 2)], // empty list elements are tolerated
    ["bytes=99-", 100, partial(99, 99)],
    ["bytes=100-", 100, unsatisfiable],
    ["bytes=100-200", 100, unsatisfiable],
    ["bytes=-0", 100, unsatisfiable],
    ["bytes=0-", 0, unsatisfiable],
    ["bytes=0-0", 0, unsatisfiable],
    ["bytes=-5", 0, full("empty")], // satisfiable, but no Content-Range can describe zero bytes
    ["bytes=-0", 0, unsatisfiable],
    ["bytes=5-3", 100, full("invalid")],
    ["bytes=abc", 100, full("invalid")],
    ["bytes=1-2-3", 100, full("invalid")],
    ["bytes=-", 100, full("invalid")],
    ["bytes=", 100, full("invalid")],
    ["bytes=0x1-2", 100, full("invalid")],
    ["bytes=+1-2", 100, full("invalid")],
    ["bytes=1.5-2", 100, full("invalid")],
    ["items=0-9", 100, full("invalid")],
    ["0-9", 100, full("invalid")],
    ["", 100, full("invalid")],
    ["bytes=0-1,5-6", 100, full("multiple")],
    ["bytes=0-1, -5", 100, full("multiple")],
    ["bytes=0-1,x", 100, full("invalid")],
  ];
  it.each(cases)("%j of %i bytes", (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});

describe("parseEntityTags", () => {
  const cases: Array<[string, ReturnType<typeof parseEntityTags>]> = [
    ["*", "*"],
    [" * ", "*"],
    ['"abc"', [{ weak: false, opaque: "abc" }]],
    ['W/"abc"', [{ weak: true, opaque: "abc" }]],
    [
      '"a", W/"b" ,"c"',
      [
        { weak: false, opaque: "a" },
        { weak: true, opaque: "b" },
        { weak: false, opaque: "c" },
      ],
    ],
    ['"a,b"', [{ weak: false, opaque: "a,b" }]],
    ["abc", [{ weak: false, opaque: "abc" }]],
    ['""', [{ weak: false, opaque: "" }]],
    ["", []],
  ];
  it.each(cases)("%j", (header, expected) => expect(parseEntityTags(header)).toEqual(expected));
});

describe("parseHttpDate", () => {
  const t = Date.UTC(1994, 10, 6, 8, 49, 37);
  const cases: Array<[string | undefined, number | undefined]> = [
    ["Sun, 06 Nov 1994 08:49:37 GMT", t],
    ["Sunday, 06-Nov-94 08:49:37 GMT", t],
    ["Sun Nov  6 08:49:37 1994", t], // asctime is UTC although it says no zone
    [" Sun, 06 Nov 1994 08:49:37 GMT ", t],
    ["Sun, 06 Nov 1994 08:49:37 +0100", undefined],
    ["1994-11-06T08:49:37Z", undefined],
    ["1994", undefined],
    ["yesterday", undefined],
    ["Sun, 99 Nov 1994 08:49:37 GMT", undefined],
    ["", undefined],
    [undefined, undefined],
  ];
  it.each(cases)("%j", (value, expected) => expect(parseHttpDate(value)).toBe(expected));
});

describe("evaluatePreconditions", () => {
  const modified = Date.UTC(2024, 0, 10, 12, 0, 0);
  const v: Validators = { etag: "abc", lastModified: modified };
  const at = (ms: number) => new Date(ms).toUTCString();
  const before = at(modified - 1000);
  const same = at(modified);
  const after = at(modified + 1000);
  const cases: Array<[string, string, ConditionalHeaders, ReturnType<typeof evaluatePreconditions>]> = [
    ["no conditions", "GET", {}, "proceed"],
    ["If-None-Match matching", "GET", { ifNoneMatch: '"abc"' }, "not-modified"],
    ["If-None-Match matching on HEAD", "HEAD", { ifNoneMatch: '"abc"' }, "not-modified"],
    ["If-None-Match weakly matching", "GET", { ifNoneMatch: 'W/"abc"' }, "not-modified"],
    ["If-None-Match in a list", "GET", { ifNoneMatch: '"x", "abc"' }, "not-modified"],
    ["If-None-Match *", "GET", { ifNoneMatch: "*" }, "not-modified"],
    ["If-None-Match other", "GET", { ifNoneMatch: '"other"' }, "proceed"],
    ["If-None-Match matching on a write", "PUT", { ifNoneMatch: '"abc"' }, "precondition-failed"],
    ["If-Modified-Since same second", "GET", { ifModifiedSince: same }, "not-modified"],
    ["If-Modified-Since later", "GET", { ifModifiedSince: after }, "not-modified"],
    ["If-Modified-Since earlier", "GET", { ifModifiedSince: before }, "proceed"],
    ["If-Modified-Since invalid", "GET", { ifModifiedSince: "soon" }, "proceed"],
    ["If-Modified-Since on a write", "PUT", { ifModifiedSince: after }, "proceed"],
    ["If-None-Match wins over If-Modified-Since", "GET", { ifNoneMatch: '"x"', ifModifiedSince: after }, "proceed"],
    ["If-Match matching", "GET", { ifMatch: '"abc"' }, "proceed"],
    ["If-Match *", "GET", { ifMatch: "*" }, "proceed"],
    ["If-Match other", "GET", { ifMatch: '"other"' }, "precondition-failed"],
    ["If-Match weak (strong comparison)", "GET", { ifMatch: 'W/"abc"' }, "precondition-failed"],
    ["If-Match before If-None-Match", "GET", { ifMatch: '"x"', ifNoneMatch: '"abc"' }, "precondition-failed"],
    ["If-Unmodified-Since earlier", "GET", { ifUnmodifiedSince: before }, "precondition-failed"],
    ["If-Unmodified-Since same", "GET", { ifUnmodifiedSince: same }, "proceed"],
    ["If-Unmodified-Since invalid", "GET", { ifUnmodifiedSince: "never" }, "proceed"],
    ["If-Match wins over If-Unmodified-Since", "GET", { ifMatch: '"abc"', ifUnmodifiedSince: before }, "proceed"],
  ];
  it.each(cases)("%s", (_name, method, headers, expected) => {
    expect(evaluatePreconditions(method, headers, v)).toBe(expected);
  });

  it("ignores date conditions when there is no Last-Modified", () => {
    const noDate: Validators = { etag: "abc", lastModified: undefined };
    expect(evaluatePreconditions("GET", { ifModifiedSince: after }, noDate)).toBe("proceed");
    expect(evaluatePreconditions("GET", { ifUnmodifiedSince: before }, noDate)).toBe("proceed");
  });
});

describe("ifRangeMatches", () => {
  const modified = Date.UTC(2024, 0, 10, 12, 0, 0);
  const v: Validators = { etag: "abc", lastModified: modified };
  const cases: Array<[string, boolean]> = [
    ['"abc"', true],
    [' "abc" ', true],
    ['"other"', false],
    ['W/"abc"', false], // If-Range needs a strong match
    ['"abc", "other"', false], // a list is not a valid If-Range
    [new Date(modified).toUTCString(), true],
    [new Date(modified + 1000).toUTCString(), false], // a date must match exactly, not be later
    [new Date(modified - 1000).toUTCString(), false],
    ["garbage", false],
    ["*", false],
  ];
  it.each(cases)("%j", (header, expected) => expect(ifRangeMatches(header, v)).toBe(expected));
});
