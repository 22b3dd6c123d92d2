// The web view's stylesheet and its one small script, served from the same origin (the CSP forbids inline ones).
// Kept as text in the build, so `tsc` alone ships them. Colours pass WCAG AA contrast (4.5:1) on their backgrounds.
// The palette, the result tables', the brief's and the chart's rules are views/'s, shared with the MCP Apps (uPlot's
// own stylesheet and the chart script are built: built-assets.ts).
import { BRIEF_CSS } from "../views/brief-view.js";
import { CHART_CSS } from "../views/chart-view.js";
import { LINEAGE_CSS } from "../views/lineage-view.js";
import { PALETTE_CSS, TABLE_CSS } from "../views/table-style.js";

/** Light and dark palettes; the focus ring is 3px and never removed. */
export const STYLESHEET = `${PALETTE_CSS}* { box-sizing: border-box; }
html { font-size: 100%; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 1rem/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--link); text-underline-offset: 0.15em; }
a:visited { color: var(--link-visited); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: 2px; }
main:focus { outline: none; }

.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -10000px; top: 0; background: var(--bg); padding: 0.5rem 1rem; }
.skip:focus { left: 0.5rem; top: 0.5rem; z-index: 10; }
header.site { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; align-items: center; padding: 0.75rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--panel); }
header.site .brand { font-weight: 700; font-size: 1.15rem; color: var(--fg); text-decoration: none; }
header.site p { margin: 0; }
header.site nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; list-style: none; margin: 0; padding: 0; }
header.site nav a[aria-current="page"] { font-weight: 700; color: var(--fg); }
main { padding: 1rem 1.5rem 2rem; max-width: 90rem; }
footer.site { padding: 0.5rem 1.5rem 1.5rem; color: var(--muted); font-size: 0.875rem; }
h1 { font-size: 1.6rem; margin: 0.5rem 0 0.75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 1.75rem 0 0.5rem; }
.muted { color: var(--muted); }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9rem; }
pre { background: var(--panel); border: 1px solid var(--line); padding: 0.75rem; overflow: auto; max-height: 32rem; white-space: pre-wrap; overflow-wrap: anywhere; }
form.find { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: end; margin: 0.5rem 0 1rem; }
form.find p { flex-basis: 100%; margin: 0; }
form.find .field, form.compare .field { display: flex; flex-direction: column; gap: 0.2rem; }
label { font-weight: 600; }
input[type="search"], select { font: inherit; padding: 0.35rem 0.5rem; border: 1px solid var(--muted); border-radius: 4px; background: var(--bg); color: var(--fg); }
input[type="search"] { min-width: 18rem; }
button { font: inherit; padding: 0.35rem 0.9rem; border: 1px solid var(--link); border-radius: 4px; background: var(--link); color: var(--bg); cursor: pointer; }
.crumbs { margin: 0.25rem 0; }
.crumbs ol { display: flex; flex-wrap: wrap; list-style: none; margin: 0; padding: 0; }
.crumbs li + li::before { content: "/"; padding: 0 0.4rem; color: var(--muted); }
.chips { display: flex; flex-wrap: wrap; gap: 0.4rem 0.75rem; list-style: none; padding: 0; margin: 0.25rem 0 0.75rem; }
${TABLE_CSS}${BRIEF_CSS}${CHART_CSS}.summary { display: block; color: var(--muted); font-size: 0.875rem; overflow-wrap: anywhere; }
.callout { border: 1px solid var(--stale-fg); background: var(--stale-bg); color: var(--stale-fg); padding: 0.6rem 0.9rem; border-radius: 4px; }
.callout a { color: inherit; font-weight: 600; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
dl.meta dd.pre { white-space: pre-wrap; }
table.versions th, table.versions td { overflow-wrap: break-word; }
.pager { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: 0.75rem 0; }
table.diff td.line { color: var(--muted); text-align: right; width: 4rem; font-variant-numeric: tabular-nums; }
table.diff td.text { white-space: pre-wrap; overflow-wrap: anywhere; }
table.diff tr.del td { background: var(--del-bg); color: var(--del-fg); }
table.diff tr.ins td { background: var(--ins-bg); color: var(--ins-fg); }
table.diff tr.gap td { color: var(--muted); font-style: italic; }
table.diff td.mark { width: 1.5rem; font-weight: 700; }
img.preview { max-width: 100%; height: auto; border: 1px solid var(--line); background: var(--panel); }
form.compare { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: end; margin: 0.5rem 0; }
.error-message { font-size: 1.05rem; }
ul.steps-brief { list-style: none; margin: 0; padding: 0; }
ol.task-steps > li { margin-bottom: 0.75rem; }
ol.task-steps p { margin: 0 0 0.25rem; }
section.callout h3 { margin-top: 0.25rem; }
.table-wrap + .table-wrap { margin-top: 1rem; }
blockquote.pre { white-space: pre-wrap; margin: 0.25rem 0 0.5rem 1rem; color: var(--muted); }
.usage { display: flex; flex-wrap: wrap; gap: 0.1rem 0.5rem; align-items: center; }
code.label { white-space: nowrap; }
meter { -webkit-appearance: none; appearance: none; width: 7rem; height: 0.9rem; border: 1px solid var(--muted); border-radius: 2px; background: var(--panel); }
meter::-webkit-meter-bar { background: var(--panel); border: none; height: 100%; }
meter::-webkit-meter-optimum-value { background: var(--link); }
meter::-webkit-meter-suboptimum-value, meter::-webkit-meter-even-less-good-value { background: var(--stale-fg); }
meter::-moz-meter-bar { background: var(--link); }
code.handle { overflow-wrap: anywhere; }
${LINEAGE_CSS}ul.bounds li + li, ul.pins li + li { margin-top: 0.25rem; }
ul.pins { margin: 0.25rem 0 0; padding-left: 1.25rem; }
article.checkpoint { border-top: 1px solid var(--line); padding: 0.25rem 0 0.75rem; }
article.checkpoint h2 { margin-top: 0.75rem; }
table.lineage-edges tr.stale td, table.lineage-edges tr.stale th { background: var(--stale-bg); color: var(--stale-fg); }
table.lineage-edges tr.stale a { color: inherit; }
.actions { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; margin: 0.5rem 0; }
a.button, a.button:visited { display: inline-block; padding: 0.35rem 0.9rem; border: 1px solid var(--link); border-radius: 4px; background: var(--link); color: var(--bg); text-decoration: none; }
button.danger, a.button.danger, a.button.danger:visited { border-color: var(--del-fg); background: var(--del-fg); color: var(--bg); }
form.confirm { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; align-items: center; margin: 1rem 0; }
.confirm-what { font-size: 1.05rem; }
.notice { border: 1px solid var(--ins-fg); background: var(--ins-bg); color: var(--ins-fg); padding: 0.6rem 0.9rem; border-radius: 4px; }
`;

/** The tab's icon: three stacked stones, a cairn. */
export const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><g fill="#4f5561"><ellipse cx="16" cy="26" rx="13" ry="5"/><ellipse cx="16" cy="16.5" rx="9" ry="4.5"/><ellipse cx="16" cy="8" rx="5.5" ry="3.5"/></g></svg>
`;

/** Progressive enhancement only: "/" moves the focus to the find box; every page works without it. */
export const SCRIPT = `"use strict";
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  var box = document.getElementById("find-text");
  if (!box) return;
  event.preventDefault();
  box.focus();
  box.select();
});
`;
