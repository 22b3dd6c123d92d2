// The frame of every page (a header with the workspace's name and the navigation, the main region, a footer) and
// the error pages, each saying what to do next. No inline style or script: the CSP allows the same origin's only.
import { VERSION } from "../version.js";
import { html, type SafeHtml } from "../views/html.js";
import { workspaceHref } from "./links.js";
import type { UiReply } from "./route.js";

export const STYLESHEET_PATH = "/assets/ui.css";
export const SCRIPT_PATH = "/assets/ui.js";
export const FAVICON_PATH = "/assets/favicon.svg";

export interface Frame {
  title: string;
  body: SafeHtml;
  /** Absent on pages shown before the token is checked: they name no workspace. */
  workspaceName?: string | undefined;
  /** The header's links; the one equal to `path` is marked as the current page. */
  nav: readonly { label: string; href: string }[];
  path: string;
  /** The view may delete and approve (`--allow-changes`): the footer says so instead of "read-only". */
  changesAllowed?: boolean | undefined;
}

/** A whole HTML document. */
export function renderDocument(frame: Frame): string {
  const site = frame.workspaceName === undefined ? "Cairn" : `${frame.workspaceName} · Cairn`;
  const links = frame.nav.map(
    (item) =>
      html`<li><a href="${item.href}"${item.href === frame.path ? html` aria-current="page"` : ""}>${item.label}</a></li>`,
  );
  return `<!doctype html>\n${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · ${site}</title>
<link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml">
<link rel="stylesheet" href="${STYLESHEET_PATH}">
<script src="${SCRIPT_PATH}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site">
<a class="brand" href="${workspaceHref()}">Cairn</a>
${frame.workspaceName === undefined ? "" : html`<p class="workspace-name"><span class="muted">Workspace</span> <strong>${frame.workspaceName}</strong></p>`}
${frame.nav.length === 0 ? "" : html`<nav aria-label="Pages"><ul>${links}</ul></nav>`}
</header>
<main id="main" tabindex="-1">
${frame.body}
</main>
<footer class="site"><p>${frame.changesAllowed === true ? "A view of the workspace that may delete and approve, each after a confirmation" : "A read-only view of the workspace"} · Cairn ${VERSION}</p></footer>
</body>
</html>`}\n`;
}

/** An error page: what happened, then what to do next. */
export function errorPage(status: number, title: string, message: string, next: SafeHtml): UiReply {
  return {
    type: "page",
    status,
    title,
    body: html`<h1>${title}</h1>
<p class="error-message">${message}</p>
<div class="next-step"><h2>What to do next</h2>${next}</div>`,
  };
}

/** The 404 page for something the workspace does not hold (or a path the view does not serve). */
export function notFoundPage(message: string): UiReply {
  return errorPage(
    404,
    "Not found",
    message,
    html`<ul>
<li>Go back to <a href="${workspaceHref()}">the workspace</a> and open it from the list.</li>
<li>Search for it with <a href="${workspaceHref()}#find">find</a>: a word of its name, summary or content.</li>
<li>If it was deleted or pruned, <code>cairn changes</code> shows who did it and when.</li>
</ul>`,
  );
}
