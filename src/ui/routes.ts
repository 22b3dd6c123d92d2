// The web view's pages, in the order they are matched. A new page is one module exporting a UiRoute, added here;
// a `nav` entry puts it in every page's header.
import { artifactPage } from "./pages/artifact-page.js";
import { checkpointsPage } from "./pages/checkpoints-page.js";
import { diffPage } from "./pages/diff-page.js";
import { download } from "./pages/download.js";
import { lineageOverviewPage } from "./pages/lineage-overview-page.js";
import { lineagePage } from "./pages/lineage-page.js";
import { workspacePage } from "./pages/workspace-page.js";
import type { UiRoute } from "./route.js";

export const ROUTES: readonly UiRoute[] = [
  workspacePage,
  artifactPage,
  diffPage,
  download,
  lineageOverviewPage,
  lineagePage,
  checkpointsPage,
];
