import { createHash } from "node:crypto";
import { createRequire } from "node:module";

// anafanafo ships no types and is CommonJS; its whole API is this one function.
const require = createRequire(import.meta.url);
const measureText = require("anafanafo") as (text: string, options: { font: string }) => number;

/** The states a CI badge can show (docs/compat.md 7.6), in the order Inedo documents them. */
export const BADGE_STATES = ["success", "pending", "running", "warning", "error", "unknown"] as const;
export type BadgeState = (typeof BADGE_STATES)[number];

/** Right-panel colours of Inedo's published badge files (docs/compat.md 7.6). */
export const BADGE_COLOURS: Readonly<Record<BadgeState, string>> = {
  success: "#499e8d",
  pending: "#48729d",
  running: "#48729d",
  warning: "#ee9d66",
  error: "#de5948",
  unknown: "#a6adb6",
};

const LABEL_COLOUR = "#282b3a";
const MARK_COLOURS = ["#f37326", "#f6a52b"] as const;

/**
 * Geometry in viewBox units. The height is Inedo's (56); the font size makes the text about 11 px
 * when the badge is shown 20 px high (shields.io's size) and 21 px at 2x.
 */
const BADGE_HEIGHT = 56;
export const BADGE_FONT_SIZE = 30;
export const BADGE_PADDING_X = 18;
const RADIUS = 6;
const MARK_SIZE = 22;
const MARK_GAP = 10;
/** Baseline that centres Verdana's lower case and ascenders vertically (28 + half the cap height). */
const TEXT_BASELINE = 39;
const SHADOW_OFFSET = 2;
/** Displayed height at 1x; the width attribute follows the viewBox's aspect ratio. */
const DISPLAY_HEIGHT = 20;

/** anafanafo's bold Verdana table is for 10 px; glyph advances scale linearly with the size. */
const MEASURED_FONT = "bold 10px Verdana";
const MEASURED_SIZE = 10;
const FONT_FAMILY = "Verdana,DejaVu Sans,sans-serif";

/** Width of `text` in viewBox units at the badge's font size, as the badge text is drawn. */
function measureBadgeText(text: string): number {
  return round2((measureText(text, { font: MEASURED_FONT }) * BADGE_FONT_SIZE) / MEASURED_SIZE);
}

export interface BadgeLayout {
  /** Total width in viewBox units (the `<W>` of `viewBox="0 0 <W> 56"`). */
  width: number;
  leftWidth: number;
  rightWidth: number;
  labelTextWidth: number;
  stateTextWidth: number;
}

/** Panel widths are whole units: measured text plus padding, rounded up so the word always fits. */
export function badgeLayout(state: BadgeState, label = "build"): BadgeLayout {
  const labelTextWidth = measureBadgeText(label);
  const stateTextWidth = measureBadgeText(state);
  const leftWidth = Math.ceil(BADGE_PADDING_X + MARK_SIZE + MARK_GAP + labelTextWidth + BADGE_PADDING_X);
  const rightWidth = Math.ceil(BADGE_PADDING_X + stateTextWidth + BADGE_PADDING_X);
  return { width: leftWidth + rightWidth, leftWidth, rightWidth, labelTextWidth, stateTextWidth };
}

export interface BadgeOptions {
  /** Word in the dark left panel; Inedo's is "build". */
  label?: string;
}

/**
 * The badge as a standalone SVG document. Pure: the same state and label always give the same bytes,
 * so callers may cache the result and derive an ETag from it with `badgeEtag`.
 */
export function renderBadge(state: BadgeState, options: BadgeOptions = {}): string {
  const label = options.label ?? "build";
  const { width, leftWidth, rightWidth, labelTextWidth, stateTextWidth } = badgeLayout(state, label);
  const colour = BADGE_COLOURS[state];
  const h = BADGE_HEIGHT;
  const r = RADIUS;
  const markX = BADGE_PADDING_X + MARK_SIZE / 2;
  const labelX = round2(BADGE_PADDING_X + MARK_SIZE + MARK_GAP + labelTextWidth / 2);
  const stateX = round2(leftWidth + rightWidth / 2);
  const displayWidth = round2((width * DISPLAY_HEIGHT) / h);
  const arc = `a${r} ${r} 0 0 1`;

  const leftPanel = `M${r} 0H${leftWidth}V${h}H${r}${arc}-${r}-${r}V${r}${arc} ${r}-${r}z`;
  const rightPanel = `M${leftWidth} 0H${width - r}${arc} ${r} ${r}V${h - r}${arc}-${r} ${r}H${leftWidth}z`;

  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${displayWidth}" height="${DISPLAY_HEIGHT}"`,
    ` viewBox="0 0 ${width} ${h}" role="img" aria-label="${escapeXml(`${label}: ${state}`)}">`,
    `<title>${escapeXml(state)}</title>`,
    `<g shape-rendering="geometricPrecision">`,
    `<path fill="${LABEL_COLOUR}" d="${leftPanel}"/>`,
    `<path fill="${colour}" d="${rightPanel}"/>`,
    `<circle cx="${markX}" cy="${h / 2}" r="${MARK_SIZE / 2}" fill="${MARK_COLOURS[0]}"/>`,
    `<circle cx="${markX + 3}" cy="${h / 2 - 3}" r="${MARK_SIZE / 4}" fill="${MARK_COLOURS[1]}"/>`,
    `</g>`,
    `<g fill="#fff" text-anchor="middle" font-family="${FONT_FAMILY}" font-size="${BADGE_FONT_SIZE}"`,
    ` font-weight="bold" text-rendering="geometricPrecision">`,
    textWithShadow(label, labelX, labelTextWidth),
    textWithShadow(state, stateX, stateTextWidth),
    `</g>`,
    `</svg>`,
  ].join("");
}

/**
 * A strong ETag for one SVG's bytes. When the route gzips, it must send a different tag for the
 * compressed variant (or mark it weak), because strong tags name exact bytes.
 */
export function badgeEtag(svg: string): string {
  return `"${createHash("sha1").update(svg).digest("base64url")}"`;
}

/**
 * A translucent dark copy under the white text keeps the word legible on the light panels
 * (warning, unknown). textLength pins the drawn width to the measured one, so a fallback font
 * that runs wider than Verdana is squeezed rather than spilling out of its panel.
 */
function textWithShadow(text: string, x: number, textWidth: number): string {
  const escaped = escapeXml(text);
  const common = `x="${x}" textLength="${textWidth}" lengthAdjust="spacingAndGlyphs"`;
  return (
    `<text ${common} y="${TEXT_BASELINE + SHADOW_OFFSET}" fill="#010101" fill-opacity=".3" aria-hidden="true">` +
    `${escaped}</text><text ${common} y="${TEXT_BASELINE}">${escaped}</text>`
  );
}

function escapeXml(text: string): string {
  return Array.from(text)
    .filter(isXmlChar)
    .join("")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** XML 1.0's Char production: controls, lone surrogates and U+FFFE/U+FFFF cannot appear even escaped. */
function isXmlChar(char: string): boolean {
  const cp = char.codePointAt(0) ?? 0;
  return (
    cp === 0x9 ||
    cp === 0xa ||
    cp === 0xd ||
    (cp >= 0x20 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    (cp >= 0x10000 && cp <= 0x10ffff)
  );
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
