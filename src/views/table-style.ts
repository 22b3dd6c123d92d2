// The palette and the result table's rules, shared by the web view's stylesheet (ui/assets.ts) and the MCP Apps, so
// a table looks and wraps the same in both. Text in tables wraps inside its cell rather than widening the table: at
// 1,280 px a result of ordinary columns fits without a sideways scroll (the scroll stays for truly wide tables).

const LIGHT = `
  --bg: #ffffff; --fg: #1b1b1f; --muted: #4f5561; --line: #d3d7de; --panel: #f4f6f8;
  --link: #0b57b0; --link-visited: #5a3a9e; --focus: #c24a00;
  --stale-bg: #fff1c2; --stale-fg: #5c3b00; --del-bg: #fde5e5; --del-fg: #7a1111; --ins-bg: #e3f5e6; --ins-fg: #0f4d1c;
`;
const DARK = `
    --bg: #16181d; --fg: #eceef2; --muted: #b3b9c4; --line: #3a3f4a; --panel: #20242b;
    --link: #8cb8ff; --link-visited: #c8a8ff; --focus: #ffb86b;
    --stale-bg: #4a3800; --stale-fg: #ffe4a0; --del-bg: #4d1a1a; --del-fg: #ffd0d0; --ins-bg: #173d22; --ins-fg: #c8f5d2;
`;

/** Light and dark palettes, the dark one following the system's preference. */
export const PALETTE_CSS = `:root {${LIGHT}  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {${DARK}  }
}
`;

/** The palette, then the theme a host asks for (`data-theme` on the root element) over the system's preference. */
export const THEMED_PALETTE_CSS = `${PALETTE_CSS}:root[data-theme="light"] {${LIGHT}  color-scheme: light;
}
:root[data-theme="dark"] {${DARK}  color-scheme: dark;
}
`;

/** A result table: header names over their types, numbers right-aligned and unbroken, long text wrapped. */
export const TABLE_CSS = `.table-wrap { overflow-x: auto; border: 1px solid var(--line); }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; padding: 0.5rem; font-weight: 600; }
th, td { text-align: left; padding: 0.35rem 0.6rem; border-top: 1px solid var(--line); vertical-align: top; }
td { overflow-wrap: anywhere; min-width: 4ch; }
tbody th { font-weight: 400; }
thead th { background: var(--panel); border-top: none; overflow-wrap: anywhere; }
thead .col-type { display: block; color: var(--muted); font-weight: 400; font-size: 0.8125rem; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.null { color: var(--muted); font-style: italic; }
table.changes thead th, table.changes td:first-child { overflow-wrap: normal; }
`;
