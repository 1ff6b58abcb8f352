import { createRequire } from "node:module";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import {
  BADGE_COLOURS,
  BADGE_FONT_SIZE,
  BADGE_PADDING_X,
  BADGE_STATES,
  type BadgeState,
  badgeEtag,
  badgeLayout,
  renderBadge,
} from "../../src/areas/ci-badges/badge-svg.js";

// The expected widths are computed here with the library itself, not taken from the module under test.
const require = createRequire(import.meta.url);
const anafanafo = require("anafanafo") as (text: string, options: { font: string }) => number;
const measured = (text: string) => (anafanafo(text, { font: "bold 10px Verdana" }) * BADGE_FONT_SIZE) / 10;

// Colours straight from docs/compat.md 7.6, so a wrong table in the module fails here.
const SPEC_COLOURS: Record<BadgeState, string> = {
  success: "#499e8d",
  pending: "#48729d",
  running: "#48729d",
  warning: "#ee9d66",
  error: "#de5948",
  unknown: "#a6adb6",
};

interface Attrs {
  [name: string]: string;
}
interface SvgText extends Attrs {
  "#text": string;
}
interface ParsedBadge {
  svg: Attrs & {
    title: string;
    g: [{ path: Attrs[]; circle: Attrs[] }, Attrs & { text: SvgText[] }];
  };
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseAttributeValue: false,
  parseTagValue: false,
  isArray: (name) => ["g", "path", "circle", "text"].includes(name),
});

function parse(svg: string): ParsedBadge {
  expect(XMLValidator.validate(svg)).toBe(true);
  return parser.parse(svg) as ParsedBadge;
}

function viewBox(badge: ParsedBadge): number[] {
  return (badge.svg.viewBox ?? "").split(" ").map(Number);
}

/** The right panel is the path filled with the state colour; it runs from its `M x 0` to the right edge. */
function rightPanel(badge: ParsedBadge, colour: string): { x: number; width: number } {
  const panels = badge.svg.g[0].path.filter((p) => p.fill === colour);
  expect(panels).toHaveLength(1);
  const d = panels[0]?.d ?? "";
  const start = /^M(\d+(?:\.\d+)?) 0H/.exec(d);
  expect(start).not.toBeNull();
  const x = Number(start?.[1]);
  const total = viewBox(badge)[2] ?? 0;
  // The outer right corner is the arc ending at (W, 6): the panel really reaches the viewBox edge.
  expect(d).toContain(`a6 6 0 0 1 6 6V50`);
  expect(d).toMatch(new RegExp(`^M${x} 0H${total - 6}a`));
  return { x, width: total - x };
}

describe("renderBadge", () => {
  it.each(BADGE_STATES)("draws the %s badge as docs/compat.md 7.6 describes", (state) => {
    const svg = renderBadge(state);
    const badge = parse(svg);
    const root = badge.svg;

    expect(root.xmlns).toBe("http://www.w3.org/2000/svg");
    const [minX, minY, width, height] = viewBox(badge);
    expect([minX, minY, height]).toEqual([0, 0, 56]);
    expect(width).toBeGreaterThan(0);
    expect(Number(root.height)).toBe(20);
    expect(Number(root.width)).toBeCloseTo(((width ?? 0) * 20) / 56, 1);
    expect(root.role).toBe("img");
    expect(root["aria-label"]).toBe(`build: ${state}`);
    expect(root.title).toBe(state);

    expect(BADGE_COLOURS[state]).toBe(SPEC_COLOURS[state]);
    expect(badge.svg.g[0].path.some((p) => p.fill === "#282b3a")).toBe(true);
    const panel = rightPanel(badge, SPEC_COLOURS[state]);
    expect(panel.width).toBeGreaterThanOrEqual(measured(state) + 2 * BADGE_PADDING_X);

    const texts = root.g[1].text;
    const visible = texts.filter((t) => t["aria-hidden"] === undefined);
    expect(visible.map((t) => t["#text"])).toEqual(["build", state]);
    const word = visible[1];
    // The state word is centred in the right panel and drawn at its measured width.
    expect(Number(word?.x)).toBeCloseTo(panel.x + panel.width / 2, 1);
    expect(Number(word?.textLength)).toBeCloseTo(measured(state), 1);
    expect(root.g[1]["font-family"]).toMatch(/^Verdana,/);
  });

  it("makes the left panel fit the mark and the label word", () => {
    const badge = parse(renderBadge("success"));
    const left = badge.svg.g[0].path.find((p) => p.fill === "#282b3a");
    const leftWidth = Number(/H(\d+)V56/.exec(left?.d ?? "")?.[1]);
    expect(leftWidth).toBeGreaterThanOrEqual(measured("build") + 2 * BADGE_PADDING_X);
    expect(leftWidth).toBe(rightPanel(badge, SPEC_COLOURS.success).x);
  });

  it("sizes the right panel by the word, so widths differ as the words do", () => {
    const widths = Object.fromEntries(
      BADGE_STATES.map((s) => [s, rightPanel(parse(renderBadge(s)), SPEC_COLOURS[s]).width]),
    ) as Record<BadgeState, number>;
    const byMeasure = [...BADGE_STATES].sort((a, b) => measured(a) - measured(b));
    const byPanel = [...BADGE_STATES].sort((a, b) => widths[a] - widths[b]);
    expect(byPanel).toEqual(byMeasure);
    expect(widths.unknown).toBeGreaterThan(widths.error + 50);
    // Padding plus rounding up, never more: the panel is not sized by a guess.
    for (const s of BADGE_STATES) expect(widths[s]).toBeLessThan(measured(s) + 2 * BADGE_PADDING_X + 1);
    expect(badgeLayout("unknown").rightWidth).toBe(widths.unknown);
  });

  it("is deterministic, so the route can cache the six images and their ETags", () => {
    for (const s of BADGE_STATES) {
      expect(renderBadge(s)).toBe(renderBadge(s));
      expect(badgeEtag(renderBadge(s))).toBe(badgeEtag(renderBadge(s)));
    }
    const tags = new Set(BADGE_STATES.map((s) => badgeEtag(renderBadge(s))));
    expect(tags.size).toBe(BADGE_STATES.length);
    expect(badgeEtag(renderBadge("error"))).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
  });

  it("escapes the label, so input cannot inject markup", () => {
    const label = `<script>&"x'</script>\u0000\uD800`;
    const svg = renderBadge("error", { label });
    const badge = parse(svg);
    expect(svg).not.toContain("<script");
    expect(svg.replace(/&(amp|lt|gt|quot|apos);/g, "")).not.toMatch(/&/);
    expect(svg).not.toContain("\u0000");
    const shown = badge.svg.g[1].text.filter((t) => t["aria-hidden"] === undefined);
    // The parser decodes entities: the text round-trips, minus what XML cannot carry at all.
    expect(shown[0]?.["#text"]).toBe(`<script>&"x'</script>`);
    expect(badge.svg["aria-label"]).toBe(`<script>&"x'</script>: error`);
    expect(badge.svg.title).toBe("error");
  });

  it("uses a given label and widens the left panel for it", () => {
    const short = badgeLayout("success", "ci");
    const long = badgeLayout("success", "deployment");
    // Each panel width is rounded up once, so the difference is off by less than one unit.
    expect(Math.abs(long.leftWidth - short.leftWidth - (measured("deployment") - measured("ci")))).toBeLessThan(1);
    expect(long.rightWidth).toBe(short.rightWidth);
    expect(parse(renderBadge("success", { label: "deploy" })).svg["aria-label"]).toBe("deploy: success");
  });
});
