// The web view's pages, in the order they are matched. A new page is one module exporting a UiRoute, added here;
// a `nav` entry puts it in every page's header.
import { artifactPage } from "./pages/artifact-page.js";
import { changesPage } from "./pages/changes-page.js";
import { checkpointsPage } from "./pages/checkpoints-page.js";
import { claimsPage } from "./pages/claims-page.js";
import { confirmApprovePage } from "./pages/confirm-approve.js";
import { confirmDeletePage } from "./pages/confirm-delete.js";
import { confirmDonePage } from "./pages/confirm-done.js";
import { diffPage } from "./pages/diff-page.js";
import { download } from "./pages/download.js";
import { lineageOverviewPage } from "./pages/lineage-overview-page.js";
import { lineagePage } from "./pages/lineage-page.js";
import { namespacesPage } from "./pages/namespaces-page.js";
import { sessionPage } from "./pages/session-page.js";
import { sessionsPage } from "./pages/sessions-page.js";
import { taskPage, taskRunPage } from "./pages/task-page.js";
import { tasksPage } from "./pages/tasks-page.js";
import { workspacePage } from "./pages/workspace-page.js";
import type { UiRoute } from "./route.js";

export const ROUTES: readonly UiRoute[] = [
  workspacePage,
  artifactPage,
  diffPage,
  download,
  namespacesPage,
  lineageOverviewPage,
  lineagePage,
  checkpointsPage,
  tasksPage,
  taskPage,
  taskRunPage,
  claimsPage,
  changesPage,
  sessionsPage,
  sessionPage,
  confirmDeletePage,
  confirmApprovePage,
  confirmDonePage,
];
