// The web view's pages, in the order they are matched. A new page is one module exporting a UiRoute, added here;
// a `nav` entry puts it in every page's header.
import { artifactPage } from "./pages/artifact-page.js";
import { confirmApprovePage } from "./pages/confirm-approve.js";
import { confirmDeletePage } from "./pages/confirm-delete.js";
import { confirmDonePage } from "./pages/confirm-done.js";
import { diffPage } from "./pages/diff-page.js";
import { download } from "./pages/download.js";
import { workspacePage } from "./pages/workspace-page.js";
import type { UiRoute } from "./route.js";

export const ROUTES: readonly UiRoute[] = [
  workspacePage,
  artifactPage,
  diffPage,
  download,
  confirmDeletePage,
  confirmApprovePage,
  confirmDonePage,
];
