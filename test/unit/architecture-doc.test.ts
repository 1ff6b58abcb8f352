import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import {
  areaDependencyRows,
  DOC,
  type ErrorCodeFact,
  errorCodes,
  layerDependencyRows,
  section,
  tableRows,
  type UnreadSite,
  wherePartsOf,
} from "../helpers/source-facts.js";

/**
 * docs/architecture.md shows facts of the source: how areas import each other and every error
 * code with its statuses (docs/STYLE.md "Errors"). This keeps it true: a new code, a code gone, a
 * changed status or a new import between areas fails here until the document says so.
 * `node --import tsx test/helpers/source-facts.ts --write` brings the document up to date.
 */
/** What is wrong with the documented error table, compared with the codes the source answers with. */
function errorTableProblems(table: string, codes: readonly ErrorCodeFact[]): string[] {
  const problems: string[] = [];
  const documented = new Map<string, string>();
  const documentedWhere = new Map<string, string>();
  for (const [code = "", status = "", where = "", meaning = ""] of tableRows(table)) {
    if (documented.has(code)) problems.push(`${code} is listed twice`);
    documented.set(code, status);
    documentedWhere.set(code, where);
    if (meaning === "" || meaning === "-") problems.push(`${code} has no meaning`);
  }
  for (const fact of codes) {
    const status = documented.get(fact.code);
    const where = wherePartsOf(fact.files).join(", ");
    if (status === undefined) problems.push(`${fact.code} (${fact.statuses.join(", ")}) is missing`);
    else if (status !== fact.statuses.join(", ")) {
      problems.push(`${fact.code} is documented as ${status}, answered with ${fact.statuses.join(", ")}`);
    } else if (documentedWhere.get(fact.code) !== where) {
      problems.push(`${fact.code} is documented in ${documentedWhere.get(fact.code)}, answered in ${where}`);
    }
  }
  const known = new Set(codes.map((fact) => fact.code));
  for (const code of documented.keys()) if (!known.has(code)) problems.push(`${code} is not answered anywhere`);
  return problems;
}

describe("docs/architecture.md", () => {
  const doc = readFileSync(DOC, "utf8");
  let codes: ErrorCodeFact[];
  let unread: UnreadSite[];

  // Reading every source file with the TypeScript compiler takes a few seconds.
  beforeAll(() => ({ codes, unread } = errorCodes()), 120_000);

  it("shows how the areas import each other, as the source does", () => {
    expect(tableRows(section(doc, "area-dependencies"))).toEqual(areaDependencyRows());
    expect(tableRows(section(doc, "layer-dependencies"))).toEqual(layerDependencyRows());
  });

  it("lists every error code with the statuses it is answered with, and no other", () => {
    expect(errorTableProblems(section(doc, "error-codes"), codes)).toEqual([]);
  });

  it("reads the code of every error the source makes, except another error's code passed on", () => {
    expect(unread.filter((site) => !site.passesOn)).toEqual([]);
  });

  it("finds codes through helpers, templates and defaults, with their statuses", () => {
    const statusesOf = (code: string) => codes.find((fact) => fact.code === code)?.statuses;
    expect(statusesOf("DISK_FULL")).toEqual([507]); // storage/disk-full.ts: new DomainError
    expect(statusesOf("VERSION_NOT_FOUND")).toEqual([404]); // upack/errors.ts: notFound(...)
    expect(statusesOf("RANGE_NOT_SATISFIABLE")).toEqual([416]); // http/send-blob.ts: sendError(reply, 416, ...)
    expect(statusesOf("INVALID_FIELD")).toEqual([400]); // security/validation.ts: a parameter's default
    expect(statusesOf("APPLICATION_EXISTS")).toEqual([409]); // releases: `${what.toUpperCase()}_EXISTS`
    expect(statusesOf("CONNECTOR_SECRET_UNREADABLE")).toEqual([503]); // connectors: a helper with a kind parameter
  });

  it("fails on a code missing, a code that does not exist, a wrong status and an empty meaning", () => {
    const table = section(doc, "error-codes");
    const [header, separator, first, ...rest] = table.split("\n");
    const doctored = [
      header,
      separator,
      ...rest.map((line) => line.replace(/^\| DISK_FULL +\| 507 +\|/, "| DISK_FULL | 500 |")),
      "| NO_SUCH_CODE | 400 | domain | Invented. |",
      "| DATABASE_BUSY | 503 | storage | |",
    ].join("\n");
    const [[firstCode = ""] = []] = tableRows(`${header}\n${separator}\n${first}`);
    expect(errorTableProblems(doctored, codes)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${firstCode} .*is missing$`)),
        "DISK_FULL is documented as 500, answered with 507",
        "NO_SUCH_CODE is not answered anywhere",
        "DATABASE_BUSY is listed twice",
        "DATABASE_BUSY has no meaning",
      ]),
    );
  });
});
