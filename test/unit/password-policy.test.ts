import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { checkNewPassword } from "../../src/areas/security/password-policy.js";

async function refusal(password: string, userName = "alice"): Promise<DomainError> {
  const error = await checkNewPassword(password, userName).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, `'${password}' should be refused`).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe("new passwords", () => {
  it.each([
    ["", "PASSWORD_INVALID", "must not be empty"],
    ["a", "PASSWORD_TOO_SHORT", "at least 8 characters"],
    [" ", "PASSWORD_TOO_SHORT", "at least 8 characters"],
    ["seven77", "PASSWORD_TOO_SHORT", "at least 8 characters"],
    // Counted in characters, not UTF-16 units: four emoji are four characters.
    ["🔑🔑🔐🔐", "PASSWORD_TOO_SHORT", "at least 8 characters"],
    ["        ", "PASSWORD_TOO_WEAK", "one character repeated"],
    ["aaaaaaaaaaaa", "PASSWORD_TOO_WEAK", "one character repeated"],
    ["password", "PASSWORD_TOO_COMMON", "most common passwords"],
    ["Password1", "PASSWORD_TOO_COMMON", "most common passwords"],
    ["12345678", "PASSWORD_TOO_COMMON", "most common passwords"],
    ["qwertyuiop", "PASSWORD_TOO_COMMON", "most common passwords"],
    ["iloveyou", "PASSWORD_TOO_COMMON", "most common passwords"],
    ["x".repeat(1025), "PASSWORD_INVALID", "at most 1024 characters"],
  ])("refuses %j (%s)", async (password, code, message) => {
    const error = await refusal(password);
    expect(error.kind).toBe("invalid");
    expect(error.code).toBe(code);
    expect(error.message).toMatch(/^password: /);
    expect(error.message).toContain(message);
  });

  it("refuses the user's own name, in any case", async () => {
    expect((await refusal("Jonathan-Smith", "jonathan-smith")).message).toBe("password: must not be the user name");
  });

  it.each(["correct horse battery staple", "alice-password-1", "Tr0ub4dor&3x", "ünïcödé-pässwörd"])(
    "accepts %j",
    async (password) => {
      await expect(checkNewPassword(password, "alice")).resolves.toBeUndefined();
    },
  );
});
