import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { STATUS_BY_KIND } from "../../src/http/errors.js";
import { azureFailure } from "../../src/storage/azure-errors.js";
import { objectStoreError } from "../../src/storage/s3-errors.js";

/**
 * How object-store failures reach clients: a store that does not answer is a 503 (try again
 * later), one that answers with an error a 502; a bug is never dressed up as an outage.
 */
const WHERE = 'bucket "b" at http://127.0.0.1:9';
const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });

describe("objectStoreError (S3)", () => {
  it("a store that does not answer is 503 OBJECT_STORE_UNREACHABLE, naming the network error", () => {
    const error = objectStoreError("read a blob", WHERE, Object.assign(refused(), { $metadata: { attempts: 3 } }));
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ kind: "unavailable", code: "OBJECT_STORE_UNREACHABLE" });
    expect(STATUS_BY_KIND[(error as DomainError).kind]).toBe(503);
    expect((error as Error).message).toBe(
      `The object store did not answer when trying to read a blob in ${WHERE} (ECONNREFUSED); try again later.`,
    );
    const timedOut = objectStoreError("read a blob", WHERE, Object.assign(new Error("x"), { name: "TimeoutError" }));
    expect(timedOut).toMatchObject({ code: "OBJECT_STORE_UNREACHABLE" });
  });

  it("an error answer stays 502, and an error without a network code is not taken for an outage", () => {
    const answered = Object.assign(new Error("boom"), { name: "InternalError", $metadata: { httpStatusCode: 500 } });
    expect(objectStoreError("store a blob", WHERE, answered)).toMatchObject({
      kind: "bad_gateway",
      code: "OBJECT_STORE_FAILED",
    });
    // A status answered wins over a network-looking code.
    const withStatus = Object.assign(refused(), { $metadata: { httpStatusCode: 503 } });
    expect(objectStoreError("store a blob", WHERE, withStatus)).toMatchObject({ code: "OBJECT_STORE_FAILED" });
    expect(objectStoreError("store a blob", WHERE, new TypeError("bug"))).toMatchObject({
      code: "OBJECT_STORE_FAILED",
    });
  });
});

describe("azureFailure", () => {
  it("no answer is 503 AZURE_UNREACHABLE; an answer with an error stays 502", () => {
    expect(azureFailure("downloading x", refused())).toMatchObject({
      kind: "unavailable",
      code: "AZURE_UNREACHABLE",
      message: "Azure storage did not answer while downloading x (ECONNREFUSED).",
    });
    expect(azureFailure("downloading x", { statusCode: 500, code: "InternalError" })).toMatchObject({
      kind: "bad_gateway",
      code: "AZURE_REQUEST_FAILED",
    });
  });
});
