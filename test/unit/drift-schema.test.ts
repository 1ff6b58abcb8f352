import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { expandVariables, strictTemplateProblem, variableReferences } from "../../src/domain/variables.js";
import type { DesiredItem } from "../../src/drift/model.js";
import { MAX_ITEMS, parseItems, presentItem } from "../../src/drift/items/schema.js";

function refusal(input: unknown): { code: string; message: string } {
  try {
    parseItems(input, null);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    const { code, message, kind } = error as DomainError;
    expect(kind).toBe("invalid");
    return { code, message };
  }
  throw new Error("parseItems accepted the input");
}

const file = (extra: Record<string, unknown>) => ({ type: "file", path: "/etc/app.conf", content: "x", ...extra });

describe("parseItems", () => {
  it("keeps every type with its key, defaults and mode as a number", () => {
    const items = parseItems(
      [
        file({ mode: "0640", sensitive: true }),
        { type: "directory", path: "/var/app", mode: 755 },
        { type: "package", feed: "apps", group: "acme", name: "web", version: "1.2.0", target: "/srv/web" },
        { type: "package", feed: "apps", name: "web", version: "latest", target: "/srv/web2" },
        { type: "config-key", path: "/etc/app.json", format: "json", key: "server.port", value: 8080 },
        { type: "config-key", path: "/etc/app.ini", format: "ini", key: "db.host", exists: false },
        { type: "process", pattern: "nginx: master" },
      ],
      "web",
    );
    expect(items.map((item) => [item.type, item.key])).toEqual([
      ["file", "/etc/app.conf"],
      ["directory", "/var/app"],
      ["package", "apps/acme/web::/srv/web"],
      ["package", "apps/web::/srv/web2"],
      ["config-key", "/etc/app.json#server.port"],
      ["config-key", "/etc/app.ini#db.host"],
      ["process", "nginx: master"],
    ]);
    expect(items[0]).toEqual({
      type: "file",
      key: "/etc/app.conf",
      role: "web",
      sensitive: true,
      properties: { path: "/etc/app.conf", exists: true, content: "x", mode: 0o640 },
    });
    expect(items[1]?.properties).toEqual({ path: "/var/app", exists: true, mode: 0o755 });
    expect(items[1]?.sensitive).toBe(false);
    expect(items[3]?.properties.group).toBe("");
  });

  it.each([
    [[file({ mode: "0999" })], "items[0].mode: must be an octal mode such as 0644."],
    [[file({ mode: "rw-r--r--" })], "items[0].mode: must be an octal mode such as 0644."],
    [[file({ path: "/etc/../passwd" })], "items[0].path: must not contain '..'."],
    [[file({ path: "etc/app.conf" })], "items[0].path: must be an absolute path such as /etc/app.conf."],
    [
      [file({ path: "/etc//app.conf" })],
      "items[0].path: must be normalised (no '.', '//' or trailing '/'): /etc/app.conf.",
    ],
    [
      [file({ path: "/etc/./app.conf" })],
      "items[0].path: must be normalised (no '.', '//' or trailing '/'): /etc/app.conf.",
    ],
    [[file({ path: "/etc\\app.conf" })], "items[0].path: must use '/' separators (no backslash)."],
    [[file({ path: "/etc/a\u0000b" })], "items[0].path: must not contain NUL or control characters."],
    [[file({ path: `/${"a".repeat(5000)}` })], "items[0].path: must be at most 4096 characters."],
    [[file({ path: "/" })], "items[0].path: must not be / itself."],
    [[{ type: "file", path: "/a" }], "items[0]: a file that exists needs one of content, contentBase64 or template."],
    [[file({ template: "y" })], "items[0].template: give only one of content, contentBase64 or template."],
    [[file({ exists: false })], "items[0].content: is not allowed with exists: false."],
    [[file({ bogus: 1 })], "items[0]: unknown property 'bogus'."],
    [[file({ sensitive: "yes" })], "items[0].sensitive: must be true or false."],
    [[file({ contentBase64: undefined, content: undefined, template: "$" })], "items[0].template: '$' at offset 0"],
    [[{ type: "nope" }], "items[0].type: must be one of file, directory, package, config-key or process."],
    [[{ path: "/a" }], "items[0].type: must be one of file, directory, package, config-key or process."],
    [["file"], "items[0]: must be an object with a type."],
    [[file({}), file({ content: "y" })], "items[1]: duplicates items[0] (file /etc/app.conf)."],
    [
      [{ type: "package", feed: "apps", name: "web", version: "1.2", target: "/srv" }],
      "items[0].version: must be an exact version such as 1.2.0, or latest.",
    ],
    [
      [{ type: "package", feed: "apps", group: "/acme", name: "web", version: "1.0.0", target: "/srv" }],
      "items[0].group: must not start or end with '/'.",
    ],
    [
      [{ type: "package", feed: "apps", name: "we b", version: "1.0.0", target: "/srv" }],
      "items[0].name: may only contain letters, digits, '-', '.' and '_'.",
    ],
    [
      [{ type: "package", feed: "a/b", name: "web", version: "1.0.0", target: "/srv" }],
      "items[0].feed: must be a feed name (letters, digits, '.', '_', '-', '~').",
    ],
    [
      [{ type: "package", feed: "apps", name: "web", version: "1.0.0", target: "/srv/../etc" }],
      "items[0].target: must not contain '..'.",
    ],
    [
      [{ type: "config-key", path: "/a.env", format: "env", key: "a.b", value: "x" }],
      "items[0].key: must be a variable name such as APP_PORT.",
    ],
    [
      [{ type: "config-key", path: "/a.ini", format: "ini", key: "a.b", value: 5 }],
      "items[0].value: must be a string in an ini file.",
    ],
    [
      [{ type: "config-key", path: "/a.json", format: "json", key: "a" }],
      "items[0].value: is required unless exists is false.",
    ],
    [
      [{ type: "config-key", path: "/a.json", format: "yaml", key: "a", value: "1" }],
      "items[0].format: must be json, ini or env.",
    ],
    [[{ type: "process", pattern: "" }], "items[0].pattern: is required."],
    [{ items: [] }, "items: must be an array of items."],
  ])("refuses %j naming the field", (input, message) => {
    const refused = refusal(input);
    expect(refused.code).toBe("CONFIG_ITEM_INVALID");
    expect(refused.message.startsWith(message)).toBe(true);
  });

  it("refuses templates that look like anything but variables", () => {
    for (const template of [
      "${file:/etc/passwd}",
      "$(cat /etc/passwd)",
      "${env.HOME}",
      "port=$",
      "{{ include '/etc/passwd' }} $<x",
    ]) {
      const refused = refusal([file({ content: undefined, template })]);
      expect(refused.message).toMatch(/^items\[0\]\.template: '\$' at offset \d+/);
    }
    expect(parseItems([file({ content: undefined, template: "port=$Port ${Host} $$5 {{x}}" })], null)).toHaveLength(1);
  });

  it("refuses a list longer than MAX_ITEMS before looking at the items", () => {
    const many = Array.from({ length: 20_000 }, (_, i) => file({ path: `/f${i}` }));
    expect(MAX_ITEMS).toBe(10_000);
    expect(refusal(many)).toEqual({
      code: "CONFIG_TOO_MANY_ITEMS",
      message: "items: at most 10000 items (20000 given).",
    });
  });
});

describe("presentItem", () => {
  it("shows modes as octal text and hides sensitive content behind its SHA-256", () => {
    const [secret, plain, key] = parseItems(
      [
        file({ content: "hunter2", mode: 600, sensitive: true }),
        { type: "file", path: "/b", contentBase64: "aGk=", mode: "0644" },
        { type: "config-key", path: "/a.env", format: "env", key: "PASSWORD", value: "hunter2", sensitive: true },
      ],
      null,
    );
    const shown = presentItem(secret as DesiredItem);
    expect(shown).toEqual({
      type: "file",
      path: "/etc/app.conf",
      exists: true,
      contentSha256: "f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7",
      mode: "0600",
      sensitive: true,
    });
    expect(JSON.stringify(presentItem(key as DesiredItem))).not.toContain("hunter2");
    expect(presentItem(plain as DesiredItem)).toEqual({
      type: "file",
      path: "/b",
      exists: true,
      contentBase64: "aGk=",
      mode: "0644",
      sensitive: false,
    });
    // What is shown parses back to the same item (non-sensitive items round-trip).
    expect(parseItems([presentItem(plain as DesiredItem)], null)).toEqual([plain]);
  });
});

describe("variables", () => {
  it("expands $Name, ${Name} and $$ case-insensitively and names the unknown one", () => {
    const variables = new Map([["port", "8080"]]);
    expect(expandVariables("p=$Port ${PORT} $$x $5", variables)).toBe("p=8080 8080 $x $5");
    expect(() => expandVariables("$Nope", variables)).toThrow("The variable $Nope is not defined.");
    expect(variableReferences("$A ${b} $$c $a")).toEqual(["a", "b"]);
    expect(strictTemplateProblem("a $$ $b")).toBeUndefined();
  });
});
