// The contract of a web view page: a path pattern and a handler that answers a GET with a page, a file or a
// redirect. Adding a page is writing one module that exports a UiRoute and listing it in routes.ts.
import type { Actor } from "../config/identity.js";
import type { SafeHtml } from "../views/html.js";
import type { UiChanges } from "./actions.js";
import type { UiHost } from "./ui-host.js";

/** One GET, as a page handler sees it. */
export interface UiRequest {
  readonly url: URL;
  /** The named groups of the route's pattern, as the path spells them (percent-encoded: see links.ts decodePath). */
  readonly params: Readonly<Record<string, string>>;
  readonly host: UiHost;
  /** Who reads: the identity of the token the request presented. */
  readonly reader: UiReader;
  /** A query parameter; undefined when it is absent or empty. */
  query(name: string): string | undefined;
  /** Present only when the view may change the workspace (`--allow-changes`, decision 0234). */
  readonly changes?: UiChanges | undefined;
}

/**
 * What a handler answers. A page is laid out by layout.ts (header, navigation, main) with `status` (default 200);
 * a file is streamed with its media type, inline only when `inline` (the handler decides which types may be);
 * a redirect goes to a path of this server.
 */
export type UiReply =
  | { type: "page"; title: string; body: SafeHtml; status?: number }
  | { type: "file"; path: string; bytes: number; mediaType: string; filename: string; inline: boolean }
  | { type: "redirect"; location: string };

export interface UiRoute {
  /** Matched against the whole request path, still percent-encoded; named groups become `params`. */
  readonly path: RegExp;
  /** A link in every page's navigation, for pages that are a place to start from. */
  readonly nav?: { label: string; href: string };
  /**
   * Answers the request. A CairnError it throws becomes an error page: NOT_FOUND a 404, INVALID_NAME and
   * INVALID_ARGUMENT a 400, anything else a 500.
   */
  handle(request: UiRequest): Promise<UiReply>;
}

/**
 * The identity behind a request's token. `actor` undefined: the token of the process itself ($CAIRN_TOKEN, acting as
 * [identity] of cairn.toml, or the token `cairn ui` made), which owns the server; else an `[[http.tokens]]` identity.
 */
export interface UiReader {
  readonly actor: Actor | undefined;
}
