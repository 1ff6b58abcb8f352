import { curlCommand, jsonRequestLine, KEY_PLACEHOLDER, soapRequest } from "./reference-examples.js";
import { markup, raw, type SafeHtml } from "./reference-html.js";
import { type ResultOutline, resultOutline } from "./reference-result.js";
import type { NativeMethod, NativeParameter } from "./registry.js";
import { SOAP_NAMESPACE } from "./soap-namespace.js";

/**
 * The `/reference/api` pages' content (docs/seed-api.md area H; research/next-areas.md 2.4): the
 * list of every native method of this installation and one page per method, rendered from the
 * registry alone, every text through the `markup` template's escaping. The web UI shows this
 * content inside its frame (web-ui/reference): what is made here is the page's body, already
 * escaped, with its title.
 */

/** A page's title (plain text, escaped by the frame) and its body (escaped markup). */
export interface ReferenceContent {
  readonly title: string;
  readonly body: string;
}

/** The path of a method's own page. */
export function methodPath(name: string): string {
  return `/reference/api/${encodeURIComponent(name)}`;
}

function introduction(count: number): SafeHtml {
  return markup`<p>The native API of this Wharf installation: ${count} ${count === 1 ? "method" : "methods"}, each
callable over JSON at <code>/api/json/&lt;Method&gt;</code> (GET or POST; arguments in the query string, a form
or a JSON body) and over SOAP at <code>/api/soap</code> (service description at <a href="/api/soap?wsdl">/api/soap?wsdl</a>;
target namespace <code>${SOAP_NAMESPACE}</code>, SOAP 1.1 and 1.2).</p>
<p>Method and argument names are case-insensitive; indicators accept <code>Y</code>/<code>N</code> or
<code>true</code>/<code>false</code>. The API key goes in <code>key</code> or <code>API_Key</code> (query string, form or
JSON body), the <code>X-ApiKey</code> header or Basic authentication; in SOAP it is the first element,
<code>API_Key</code>. The examples use <code>${KEY_PLACEHOLDER}</code>, and the shell variables <code>$WHARF_URL</code>
(this server's address) and <code>$WHARF_API_KEY</code>.</p>`;
}

function privilege(method: NativeMethod): SafeHtml {
  return markup`<p><strong>Privilege:</strong> a System API key with the <code>native</code> scope, or a user,
personal API key or Anonymous granted <code>${method.attribute}</code>.</p>`;
}

function aliasesOf(parameter: NativeParameter): SafeHtml | undefined {
  const aliases = parameter.aliases ?? [];
  if (aliases.length === 0) return undefined;
  return markup` (also accepted as ${aliases.map((alias, i) => markup`${i > 0 && ", "}<code>${alias}</code>`)})`;
}

function parameterRow(parameter: NativeParameter): SafeHtml {
  const required = parameter.required ? "required" : "optional";
  return markup`<tr><th scope="row"><code>${parameter.name}</code></th><td>${parameter.type}</td><td>${required}</td><td>${prose(parameter.description)}${aliasesOf(parameter)}</td></tr>
`;
}

function parameters(method: NativeMethod, level: number): SafeHtml {
  const heading = headingTag(level);
  if (method.parameters.length === 0) return markup`<${heading}>Parameters</${heading}><p>None (besides the key).</p>`;
  return markup`<${heading}>Parameters</${heading}>
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Description</th></tr></thead>
<tbody>
${method.parameters.map(parameterRow)}</tbody>
</table>`;
}

function result(outline: ResultOutline, level: number): SafeHtml {
  const heading = headingTag(level);
  if (outline.shape === "none") {
    return markup`<${heading}>Result</${heading}>
<p>None: the JSON call answers an empty 200, the SOAP call an empty response element.</p>`;
  }
  const described = outline.description !== undefined && markup` - ${prose(outline.description)}`;
  const summary = markup`<p><strong>Shape:</strong> ${outline.shape}${described}</p>`;
  if (outline.fields.length === 0) return markup`<${heading}>Result</${heading}>${summary}`;
  const rows = outline.fields.map(
    (f) =>
      markup`<tr><th scope="row"><code>${f.path}</code></th><td>${f.type}</td><td>${f.required ? "always" : "when known"}</td><td>${prose(f.description)}</td></tr>
`,
  );
  return markup`<${heading}>Result</${heading}>
${summary}
<table>
<thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Presence</th><th scope="col">Description</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
}

function examples(method: NativeMethod, level: number): SafeHtml {
  const heading = headingTag(level);
  return markup`<${heading}>JSON example</${heading}>
<pre><code>${jsonRequestLine(method)}</code></pre>
<pre><code>${curlCommand(method)}</code></pre>
<${heading}>SOAP 1.1 example</${heading}>
<pre><code>${soapRequest(method)}</code></pre>`;
}

/** Summaries and descriptions are plain text in which `backticks` mark code, as in the registry's own comments. */
function prose(text: string | undefined): SafeHtml | undefined {
  if (text === undefined) return undefined;
  const parts = text.split("`");
  // An unpaired backtick is text, not the start of code that never ends.
  if (parts.length % 2 === 0) return markup`${text}`;
  return markup`${parts.map((part, i) => (i % 2 === 1 ? markup`<code>${part}</code>` : part))}`;
}

/** Heading levels come from this module only, never from data. */
function headingTag(level: number): SafeHtml {
  return raw(`h${Math.min(Math.max(Math.trunc(level), 1), 6)}`);
}

/** One method's description; `level` is the level of its own heading (2 in the list, 1 on its page). */
function methodBody(method: NativeMethod, level: number): SafeHtml {
  return markup`<p>${prose(method.summary)}</p>
${privilege(method)}
${parameters(method, level + 1)}
${result(resultOutline(method.result), level + 1)}
${examples(method, level + 1)}`;
}

/** Anchors in the list page: method names are identifiers, but anything else is made safe. */
function anchorOf(name: string): string {
  return `method-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

function indexTable(methods: readonly NativeMethod[]): SafeHtml {
  const rows = methods.map(
    (m) =>
      markup`<tr><th scope="row"><a href="#${anchorOf(m.name)}"><code>${m.name}</code></a></th><td>${prose(m.summary)}</td><td><code>${m.attribute}</code></td></tr>
`,
  );
  return markup`<table>
<caption>Methods</caption>
<thead><tr><th scope="col">Method</th><th scope="col">Summary</th><th scope="col">Privilege</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`;
}

function methodSection(method: NativeMethod): SafeHtml {
  const anchor = anchorOf(method.name);
  return markup`<section id="${anchor}" aria-labelledby="${anchor}-title">
<h2 id="${anchor}-title"><a href="${methodPath(method.name)}"><code>${method.name}</code></a></h2>
${methodBody(method, 2)}
</section>
`;
}

export function renderListPage(methods: readonly NativeMethod[]): ReferenceContent {
  const body = markup`<h1>Native API reference</h1>
<div class="reference-intro">
${introduction(methods.length)}
</div>
<nav aria-label="Methods" class="reference-index">
${indexTable(methods)}
</nav>
${methods.map(methodSection)}`;
  return { title: "Native API reference", body: body.markup };
}

export function renderMethodPage(method: NativeMethod): ReferenceContent {
  const body = markup`<nav aria-label="Breadcrumb" class="breadcrumbs"><a href="/reference/api">Native API reference</a></nav>
<h1><code>${method.name}</code></h1>
${methodBody(method, 1)}`;
  return { title: `${method.name} - Native API reference`, body: body.markup };
}

export function renderNotFoundPage(): ReferenceContent {
  const body = markup`<h1>No such method</h1>
<p>This installation has no native API method of that name. The <a href="/reference/api">native API reference</a>
lists every method it has.</p>`;
  return { title: "No such method - Native API reference", body: body.markup };
}
