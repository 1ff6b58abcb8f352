/**
 * Facts read from Wharf's source, not kept by hand: which area imports which, and every error code
 * with the HTTP statuses it is answered with. docs/architecture.md shows them and
 * test/unit/architecture-doc.test.ts fails when the document and the source disagree
 * (docs/STYLE.md "Errors": the list of codes is generated from the code or checked by a test).
 *
 * `node --import tsx test/helpers/source-facts.ts --write` rewrites those tables in the document
 * (keeping the meanings written there, adding new codes with their message as the meaning);
 * without `--write` it prints them, with the places whose code it could not read.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import ts from "typescript";
import { STATUS_BY_KIND } from "../../src/http/errors.js";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = path.join(REPO, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [full] : [];
  });
}

/** `src/areas/upack/write/routes.ts` -> `upack`; `src/http/errors.ts` -> `http`; top-level files -> their name. */
export function partOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  const [first = "", second = ""] = parts;
  if (first === "areas") return parts.length > 2 ? second : `areas/${second.replace(/\.ts$/, "")}`;
  return parts.length > 1 ? first : first.replace(/\.ts$/, "");
}

const IMPORT_SPECIFIER = /(?:^|\s)(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"|import\("(\.[^"]+)"\)/g;

/** For each part of src (area, layer or top-level file): the other parts its files import, sorted. */
export function partDependencies(): Map<string, string[]> {
  const dependencies = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const from = partOf(file);
    const seen = dependencies.get(from) ?? new Set<string>();
    dependencies.set(from, seen);
    for (const match of readFileSync(file, "utf8").matchAll(IMPORT_SPECIFIER)) {
      const target = path.resolve(path.dirname(file), match[1] ?? match[2] ?? "");
      if (!target.startsWith(SRC + path.sep)) continue;
      const to = partOf(target.replace(/\.js$/, ".ts"));
      if (to !== from) seen.add(to);
    }
  }
  return new Map([...dependencies].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, [...v].sort()]));
}

const AREA_DIRS = () =>
  readdirSync(path.join(SRC, "areas"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

export const AREA_HEADER = ["Area", "Imports areas", "Imports layers and files"];
export const LAYER_HEADER = ["Layer or file", "Imports"];

/** Rows of docs/architecture.md's table of what each area imports: other areas, then the rest. */
export function areaDependencyRows(): string[][] {
  const areas = new Set(AREA_DIRS());
  return [...partDependencies()]
    .filter(([part]) => areas.has(part))
    .map(([part, deps]) => [
      part,
      deps.filter((dep) => areas.has(dep)).join(", ") || "-",
      deps.filter((dep) => !areas.has(dep)).join(", ") || "-",
    ]);
}

/** Rows of what each layer or top-level file imports: only the composition root should import areas. */
export function layerDependencyRows(): string[][] {
  const areas = new Set(AREA_DIRS());
  return [...partDependencies()]
    .filter(([part]) => !areas.has(part))
    .map(([part, deps]) => [part, deps.join(", ") || "-"]);
}

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** The cells of a Markdown table's rows (header and separator left out), however it is aligned. */
export function tableRows(table: string): string[][] {
  return table
    .trim()
    .split("\n")
    .slice(2)
    .map((line) =>
      line
        .trim()
        .replace(/^\|/, "")
        .replace(/(?<!\\)\|$/, "")
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replaceAll("\\|", "|")),
    );
}

// ---------------------------------------------------------------------------------------------
// Error codes.

export interface ErrorCodeFact {
  readonly code: string;
  readonly statuses: number[];
  /** The message of one place that answers it, `…` where it is filled in at run time. */
  readonly message: string;
  readonly files: string[];
}

/** A place whose code could not be read: only re-throws of another error's `.code` are expected. */
export interface UnreadSite {
  readonly where: string;
  readonly text: string;
  /** True when the code is another error's `.code`, passed on with a new kind or message. */
  readonly passesOn: boolean;
}

/**
 * A value known from the source: literals (with `passOn` when another error's `.code` is a
 * possibility too), a parameter of the enclosing function, or a template of both (`${what}_EXISTS`).
 */
type Value =
  | { literal: string[]; passOn?: boolean }
  | { param: number }
  | { template: (string | { param: number; upper: boolean })[] }
  | { passOn: true };

/** How a function builds an error answer: its kind or status, code and message, as values of its parameters. */
interface Factory {
  readonly params: readonly ts.ParameterDeclaration[];
  readonly kind: Value;
  /** True when `kind` is an HTTP status (sendError), false when it is an ErrorKind. */
  readonly isStatus: boolean;
  readonly code: Value;
  readonly message: ts.Expression | { param: number } | undefined;
}

type Evaluated = Value | undefined;

export function errorCodes(): { codes: ErrorCodeFact[]; unread: UnreadSite[] } {
  const files = sourceFiles(SRC);
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    // Only Wharf's own files are needed to follow calls between them: no lib, no dependencies' types.
    noLib: true,
    noResolve: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const sources = files.flatMap((file) => program.getSourceFile(file) ?? []);
  const factories = new Map<ts.Node, Factory>();

  const fileOf = (name: string) => {
    const found = sources.find((source) => source.fileName.endsWith(name));
    if (!found) throw new Error(`${name} not found`);
    return found;
  };
  ts.forEachChild(fileOf("src/domain/errors.ts"), (node) => {
    if (!ts.isClassDeclaration(node) || node.name?.text !== "DomainError") return;
    const constructor = node.members.find(ts.isConstructorDeclaration);
    if (constructor) {
      const params = constructor.parameters;
      factories.set(node, { params, kind: { param: 0 }, isStatus: false, code: { param: 1 }, message: { param: 2 } });
    }
  });
  ts.forEachChild(fileOf("src/http/errors.ts"), (node) => {
    if (ts.isFunctionDeclaration(node) && node.name?.text === "sendError") {
      factories.set(node, {
        params: node.parameters,
        kind: { param: 1 },
        isStatus: true,
        code: { param: 2 },
        message: { param: 3 },
      });
    }
  });

  /** The function (or class) a call or `new` reaches, through imports. */
  function calleeOf(expression: ts.Expression): ts.Node | undefined {
    let symbol = checker.getSymbolAtLocation(ts.isPropertyAccessExpression(expression) ? expression.name : expression);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const declaration = symbol?.valueDeclaration ?? symbol?.declarations?.[0];
    if (!declaration) return undefined;
    if (ts.isVariableDeclaration(declaration) && declaration.initializer) return declaration.initializer;
    return declaration;
  }

  function enclosingFunction(node: ts.Node): ts.SignatureDeclaration | undefined {
    for (let current = node.parent; current; current = current.parent) {
      if (ts.isFunctionLike(current)) return current;
    }
    return undefined;
  }

  /** Literal values an expression can have, the parameter it is, or another error's code passed on. */
  function evaluate(expression: ts.Expression | undefined, within: ts.Node, depth = 0): Evaluated {
    if (!expression || depth > 5) return undefined;
    if (ts.isStringLiteralLike(expression)) return { literal: [expression.text] };
    if (ts.isNumericLiteral(expression)) return { literal: [expression.text] };
    if (ts.isParenthesizedExpression(expression) || ts.isAsExpression(expression)) {
      return evaluate(expression.expression, within, depth + 1);
    }
    if (ts.isConditionalExpression(expression) || isDefaulting(expression)) {
      const [first, second] = ts.isConditionalExpression(expression)
        ? [expression.whenTrue, expression.whenFalse]
        : [expression.left, expression.right];
      const arms = [evaluate(first, within, depth + 1), evaluate(second, within, depth + 1)];
      if (arms.some((arm) => !arm || "param" in arm || "template" in arm)) return undefined;
      const literal = arms.flatMap((arm) => (arm && "literal" in arm ? arm.literal : []));
      const passOn = arms.some((arm) => arm && "passOn" in arm && arm.passOn);
      return literal.length === 0 ? { passOn: true } : { literal, ...(passOn ? { passOn } : {}) };
    }
    if (ts.isTemplateExpression(expression)) {
      const parts: (string | { param: number; upper: boolean })[] = [expression.head.text];
      for (const span of expression.templateSpans) {
        let inner = span.expression;
        const upper =
          ts.isCallExpression(inner) &&
          ts.isPropertyAccessExpression(inner.expression) &&
          inner.expression.name.text === "toUpperCase";
        if (upper) inner = ((inner as ts.CallExpression).expression as ts.PropertyAccessExpression).expression;
        const value = evaluate(inner, within, depth + 1);
        if (!value || !("param" in value)) return undefined;
        parts.push({ param: value.param, upper }, span.literal.text);
      }
      return { template: parts };
    }
    if (ts.isPropertyAccessExpression(expression) && expression.name.text === "code") return { passOn: true };
    if (ts.isIdentifier(expression)) {
      const symbol = checker.getSymbolAtLocation(expression);
      const declaration = symbol?.valueDeclaration;
      if (!declaration) return undefined;
      const owner = enclosingFunction(expression);
      if (ts.isParameter(declaration) && owner && declaration.parent === owner) {
        return { param: owner.parameters.indexOf(declaration) };
      }
      if (ts.isVariableDeclaration(declaration) && declaration.initializer) {
        return evaluate(declaration.initializer, within, depth + 1);
      }
    }
    return undefined;
  }

  /** `a ?? b` and `a || b`: either value. */
  function isDefaulting(expression: ts.Expression): expression is ts.BinaryExpression {
    return (
      ts.isBinaryExpression(expression) &&
      (expression.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken ||
        expression.operatorToken.kind === ts.SyntaxKind.BarBarToken)
    );
  }

  /** A factory's value at one call: parameters replaced by the call's arguments (or their defaults). */
  function atCall(value: Value, call: ts.CallExpression | ts.NewExpression, factory: Factory): Evaluated {
    const argument = (index: number): Evaluated => {
      const given = call.arguments?.[index];
      return given ? evaluate(given, call) : evaluate(factory.params[index]?.initializer, call);
    };
    if ("param" in value) return argument(value.param);
    if (!("template" in value)) return value;
    // Each part at this call: text, or still a parameter (of the function this call is in).
    const parts: (string[] | { param: number; upper: boolean })[] = [];
    for (const part of value.template) {
      if (typeof part === "string") {
        parts.push([part]);
        continue;
      }
      const resolved = argument(part.param);
      if (resolved && "param" in resolved) parts.push({ param: resolved.param, upper: part.upper });
      else if (resolved && "literal" in resolved) {
        parts.push(resolved.literal.map((text) => (part.upper ? text.toUpperCase() : text)));
      } else return undefined;
    }
    if (parts.some((part) => !Array.isArray(part))) {
      return { template: parts.map((part) => (Array.isArray(part) ? part.join("") : part)) };
    }
    const texts = (parts as string[][]).reduce<string[]>(
      (sofar, options) => sofar.flatMap((text) => options.map((option) => text + option)),
      [""],
    );
    return { literal: texts };
  }

  /** Every call or `new` of a known factory, with its arguments. */
  function factoryCalls(visit: (call: ts.CallExpression | ts.NewExpression, factory: Factory) => void): void {
    for (const source of sources) {
      const walk = (node: ts.Node): void => {
        if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && node.arguments) {
          const callee = calleeOf(node.expression);
          const factory = callee && factories.get(callee);
          if (factory) visit(node, factory);
        }
        ts.forEachChild(node, walk);
      };
      walk(source);
    }
  }

  // Functions that pass a parameter on as the code are factories too (invalid, notFound, tooLarge, ...).
  for (let grown = true; grown;) {
    grown = false;
    factoryCalls((call, factory) => {
      const owner = enclosingFunction(call);
      if (!owner || factories.has(owner)) return;
      const code = atCall(factory.code, call, factory);
      if (!code || !("param" in code || "template" in code)) return;
      const kind = atCall(factory.kind, call, factory);
      if (!kind || "passOn" in kind || ("literal" in kind && kind.passOn)) return;
      factories.set(owner, {
        params: owner.parameters,
        kind,
        isStatus: factory.isStatus,
        code,
        message: messageAt(call, factory),
      });
      grown = true;
    });
  }

  /** The message expression a call makes, or the parameter of its enclosing function it comes from. */
  function messageAt(call: ts.CallExpression | ts.NewExpression, factory: Factory): Factory["message"] {
    if (!factory.message || !("param" in factory.message)) return factory.message;
    const given = call.arguments?.[factory.message.param];
    const value = given && evaluate(given, call);
    return value && "param" in value ? value : given;
  }

  const byCode = new Map<string, { statuses: Set<number>; messages: string[]; files: Set<string> }>();
  const unread: UnreadSite[] = [];
  factoryCalls((call, factory) => {
    const owner = enclosingFunction(call);
    if (owner && factories.has(owner)) return; // the factory's own body: its callers are the sites
    const source = call.getSourceFile();
    const where = `${path.relative(REPO, source.fileName)}:${source.getLineAndCharacterOfPosition(call.getStart()).line + 1}`;
    const code = atCall(factory.code, call, factory);
    const kind = atCall(factory.kind, call, factory);
    const statuses =
      kind && "literal" in kind
        ? kind.literal.map((name) =>
            factory.isStatus ? Number(name) : STATUS_BY_KIND[name as keyof typeof STATUS_BY_KIND],
          )
        : [];
    if (!code || !("literal" in code) || statuses.length === 0 || statuses.some((status) => !status)) {
      const passesOn = code !== undefined && "passOn" in code;
      unread.push({ where, text: call.getText().slice(0, 160), passesOn });
      return;
    }
    const message = messageAt(call, factory);
    const text = message && !("param" in message) ? render(message, call, factory) : undefined;
    for (const value of code.literal) {
      const entry = byCode.get(value) ?? { statuses: new Set(), messages: [], files: new Set() };
      byCode.set(value, entry);
      for (const status of statuses) entry.statuses.add(status);
      if (text !== undefined) entry.messages.push(text);
      entry.files.add(path.relative(REPO, source.fileName));
    }
  });

  /**
   * A message as a reader sees it: literal parts kept, what is filled in at run time as `…`. In a
   * factory's message, its parameters are the call's arguments; constants are their text.
   */
  function render(node: ts.Node, call?: ts.CallExpression | ts.NewExpression, factory?: Factory): string {
    const again = (inner: ts.Node) => render(inner, call, factory);
    if (ts.isStringLiteralLike(node)) return node.text;
    if (ts.isTemplateExpression(node)) {
      return node.head.text + node.templateSpans.map((span) => again(span.expression) + span.literal.text).join("");
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      return again(node.left) + again(node.right);
    }
    if (ts.isParenthesizedExpression(node)) return again(node.expression);
    if (ts.isConditionalExpression(node)) return again(node.whenTrue);
    if (ts.isIdentifier(node)) {
      const declaration = checker.getSymbolAtLocation(node)?.valueDeclaration;
      if (declaration && ts.isParameter(declaration) && call && factory) {
        const index = factory.params.indexOf(declaration);
        const argument = index >= 0 ? call.arguments?.[index] : undefined;
        if (argument) return render(argument);
      }
      if (declaration && ts.isVariableDeclaration(declaration) && declaration.initializer) {
        const text = render(declaration.initializer);
        if (text !== "…") return text;
      }
    }
    return "…";
  }

  const codes = [...byCode]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, entry]) => ({
      code,
      statuses: [...entry.statuses].sort((a, b) => a - b),
      message: entry.messages.find((text) => text.replaceAll("…", "").length > 12) ?? entry.messages[0] ?? "",
      files: [...entry.files].sort(),
    }));
  return { codes, unread };
}

export const ERROR_HEADER = ["Code", "Status", "Where", "Meaning"];

/** Rows of the error-code table; a meaning already written in the document is kept. */
export function errorCodeRows(codes: readonly ErrorCodeFact[], meanings = new Map<string, string>()): string[][] {
  return codes.map((fact) => [
    fact.code,
    fact.statuses.join(", "),
    wherePartsOf(fact.files).join(", "),
    meanings.get(fact.code) || fact.message.replaceAll("\n", " ") || "-",
  ]);
}

/** `src/areas/upack/...` -> `upack`; `src/http/...` -> `http`. */
export function wherePartsOf(files: readonly string[]): string[] {
  return [...new Set(files.map((file) => partOf(path.join(REPO, file))))].sort();
}

export const DOC = path.join(REPO, "docs/architecture.md");

/** The text between `<!-- name:start -->` and `<!-- name:end -->`. */
export function section(doc: string, name: string): string {
  const start = doc.indexOf(`<!-- ${name}:start -->`);
  const end = doc.indexOf(`<!-- ${name}:end -->`);
  if (start < 0 || end < start) throw new Error(`docs/architecture.md has no ${name} section`);
  return doc.slice(doc.indexOf("\n", start) + 1, end).trim();
}

function replaceSection(doc: string, name: string, text: string): string {
  section(doc, name); // both markers are there
  const start = doc.indexOf("\n", doc.indexOf(`<!-- ${name}:start -->`)) + 1;
  return `${doc.slice(0, start)}\n${text}\n\n${doc.slice(doc.indexOf(`<!-- ${name}:end -->`))}`;
}

/** Rewrites the document's generated tables from the source, then formats it as `npm run lint` wants. */
export async function writeDoc(codes: readonly ErrorCodeFact[]): Promise<void> {
  let doc = readFileSync(DOC, "utf8");
  const meanings = new Map(
    tableRows(section(doc, "error-codes")).map(([code = "", , , meaning = ""]) => [code, meaning]),
  );
  doc = replaceSection(doc, "area-dependencies", markdownTable(AREA_HEADER, areaDependencyRows()));
  doc = replaceSection(doc, "layer-dependencies", markdownTable(LAYER_HEADER, layerDependencyRows()));
  doc = replaceSection(doc, "error-codes", markdownTable(ERROR_HEADER, errorCodeRows(codes, meanings)));
  const options = (await prettier.resolveConfig(DOC)) ?? {};
  writeFileSync(DOC, await prettier.format(doc, { ...options, filepath: DOC }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { codes, unread } = errorCodes();
  if (process.argv.includes("--write")) {
    await writeDoc(codes);
    console.log(`${path.relative(REPO, DOC)}: ${codes.length} error codes`);
  } else {
    console.log(markdownTable(AREA_HEADER, areaDependencyRows()), "\n");
    console.log(markdownTable(LAYER_HEADER, layerDependencyRows()), "\n");
    console.log(markdownTable(ERROR_HEADER, errorCodeRows(codes)), "\n");
  }
  for (const site of unread) console.log(`${site.passesOn ? "passes on" : "UNREAD"} ${site.where}: ${site.text}`);
}
