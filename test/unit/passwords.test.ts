import { describe, expect, it } from "vitest";
import { hashPassword, verifyPassword } from "../../src/areas/security/passwords.js";

describe("password hashes", () => {
  it("use the server's scrypt cost unless a test fixture asks for less", async () => {
    const stored = await hashPassword("correct horse");
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword("correct horse", stored)).toBe(true);
    expect(await verifyPassword("wrong horse", stored)).toBe(false);
  });

  it("name the parameters they were made with, so a cheaper fixture hash verifies the same way", async () => {
    const stored = await hashPassword("correct horse", { N: 1024, r: 8, p: 1 });
    expect(stored).toMatch(/^scrypt\$1024\$8\$1\$/);
    expect(await verifyPassword("correct horse", stored)).toBe(true);
    expect(await verifyPassword("wrong horse", stored)).toBe(false);
  });
});
