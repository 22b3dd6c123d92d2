// The web view's pages, in the order they are matched. A new page is one module exporting a UiRoute, added here;
// a `nav` entry puts it in every page's header.
import { artifactPage } from "./pages/artifact-page.js";
import { diffPage } from "./pages/diff-page.js";
import { download } from "./pages/download.js";
import { sessionPage } from "./pages/session-page.js";
import { sessionsPage } from "./pages/sessions-page.js";
import { workspacePage } from "./pages/workspace-page.js";
import type { UiRoute } from "./route.js";

export const ROUTES: readonly UiRoute[] = [workspacePage, artifactPage, diffPage, download, sessionsPage, sessionPage];
