// The stylesheet's colours, read from the stylesheet itself: text, links, marks and focus ring pass WCAG AA contrast
// (4.5:1 for text, 3:1 for the focus ring) on their backgrounds, in the light and the dark palette.
import { describe, expect, it } from "vitest";
import { STYLESHEET } from "../../src/ui/assets.js";

function palettes(): Record<string, string>[] {
  return [...STYLESHEET.matchAll(/:root \{([^}]*)\}/g)].map((m) =>
    Object.fromEntries([...(m[1] as string).matchAll(/--([a-z-]+): (#[0-9a-f]{6})/g)].map((v) => [v[1], v[2]])),
  );
}

function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

const TEXT_PAIRS: [string, string][] = [
  ["fg", "bg"],
  ["fg", "panel"],
  ["muted", "bg"],
  ["muted", "panel"],
  ["link", "bg"],
  ["link", "panel"],
  ["link-visited", "bg"],
  ["bg", "link"],
  ["stale-fg", "stale-bg"],
  ["del-fg", "del-bg"],
  ["ins-fg", "ins-bg"],
  // The danger button of a confirmation (decision 0234): the page's background colour on the deletion colour.
  ["bg", "del-fg"],
];

describe("stylesheet colours", () => {
  const found = palettes();

  it("defines a light and a dark palette with the same colours", () => {
    expect(found).toHaveLength(2);
    expect(Object.keys(found[1] as object).sort()).toEqual(Object.keys(found[0] as object).sort());
  });

  it.each([0, 1])("gives text at least 4.5:1 and the focus ring 3:1 in palette %i", (index) => {
    const palette = found[index] as Record<string, string>;
    for (const [fg, bg] of TEXT_PAIRS) {
      const ratio = contrast(palette[fg] as string, palette[bg] as string);
      expect({ pair: `${fg} on ${bg}`, ok: ratio >= 4.5 }).toEqual({ pair: `${fg} on ${bg}`, ok: true });
    }
    expect(contrast(palette.focus as string, palette.bg as string)).toBeGreaterThanOrEqual(3);
  });

  it("never hides the focus ring of anything a keyboard reaches", () => {
    expect(STYLESHEET).toMatch(/:focus-visible \{ outline: 3px solid var\(--focus\)/);
    // Only <main>, focused by the skip link's jump (tabindex -1, never in the Tab order), drops its outline.
    const hidden = [...STYLESHEET.matchAll(/([^{}\n]+)\{[^}]*outline: (none|0)[^}]*\}/g)].map((m) => m[1]?.trim());
    expect(hidden).toEqual(["main:focus"]);
  });
});
