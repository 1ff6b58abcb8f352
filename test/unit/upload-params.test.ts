import { describe, expect, it } from "vitest";
import { collectUploadParams, type UploadParamsInput } from "../../src/areas/upack/write/upload-params.js";
import { DomainError } from "../../src/domain/errors.js";

const input = (overrides: Partial<UploadParamsInput>): UploadParamsInput => ({
  pathTail: undefined,
  query: {},
  body: undefined,
  bodyKind: "raw",
  ...overrides,
});

const nested = (depth: number): unknown => {
  let value: unknown = "x";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

function refusal(attempt: () => unknown): DomainError {
  try {
    attempt();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error("expected a DomainError");
}

describe("collectUploadParams: nesting depth", () => {
  it("keeps JSON metadata nested up to 64 levels", () => {
    const params = collectUploadParams(
      input({ body: { name: "app", version: "1.0.0", _meta: nested(64) }, bodyKind: "json" }),
    );
    expect(params.metadata._meta).toEqual(nested(64));
  });

  it("refuses a parameter nested deeper with a 400 naming it, however deep (no stack overflow)", () => {
    const deep = JSON.parse(`{"name":"app","_x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`) as Record<
      string,
      unknown
    >;
    for (const body of [{ name: "app", _meta: nested(65) }, deep]) {
      const error = refusal(() => collectUploadParams(input({ body, bodyKind: "json" })));
      expect(error.kind).toBe("invalid");
      expect(error.code).toBe("INVALID_UPLOAD_PARAMETER");
      expect(error.message).toMatch(/^The parameter '_(meta|x)' is nested more than 64 levels deep\.$/);
    }
  });

  it("compares only a parameter given more than once", () => {
    // One occurrence is taken as it is, whatever its shape.
    const once = collectUploadParams(input({ body: { name: "app", _list: [1, [2, { three: 3 }]] }, bodyKind: "json" }));
    expect(once.metadata._list).toEqual([1, [2, { three: 3 }]]);
    // Twice: compared, and refused when the values differ.
    const twice = collectUploadParams(
      input({ query: { name: "App" }, body: { name: "app", version: "1.0.0" }, bodyKind: "json" }),
    );
    expect(twice.name).toBe("App");
    const error = refusal(() =>
      collectUploadParams(input({ query: { title: "a" }, body: { title: "b" }, bodyKind: "json" })),
    );
    expect(error.code).toBe("CONFLICTING_PARAMETERS");
  });
});
