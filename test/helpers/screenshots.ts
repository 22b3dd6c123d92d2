// Where the browser tests save their screenshots: docs/ui/ (the README shows them) when CAIRN_UI_SCREENSHOTS=1
// (`npm run screenshots`), else a directory of this run, so that a test run never rewrites tracked files. Either way
// every screenshot is taken, so a page that cannot be drawn fails the test.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const SCREENSHOT_DIR =
  process.env.CAIRN_UI_SCREENSHOTS === "1"
    ? resolve(import.meta.dirname, "../../docs/ui")
    : mkdtempSync(join(tmpdir(), "cairn-ui-shots-"));
mkdirSync(SCREENSHOT_DIR, { recursive: true });
