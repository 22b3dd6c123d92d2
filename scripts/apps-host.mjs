// A test host for the MCP Apps, as a real host does it: a page built on the extension's own AppBridge
// (@modelcontextprotocol/ext-apps/app-bridge) renders an app's ui:// HTML in a sandboxed iframe (scripts only, an
// opaque origin) served with the CSP its resource metadata asks for, hands it a tool's input and result, and sends
// the app's tools/call requests to a real MCP client, recording each. Used by test/e2e/apps-browser.test.ts and
// bench/apps.mjs; Chromium is Debian's.
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const CHROMIUM = "/usr/bin/chromium";

/** The host page's script: one AppBridge per rendering, its tool calls sent to the page's `hostCallTool`. */
const HOST_SCRIPT = `
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
window.renderApp = (input, result, theme) => new Promise((resolve, reject) => {
  const started = performance.now();
  const frame = document.createElement("iframe");
  frame.title = "Cairn app";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.cssText = "width:100%;border:1px solid #ccc;height:200px;display:block";
  const timings = { started, initialized: 0, result: 0, rendered: 0 };
  window.appTimings = timings;
  // The bridge listens before the app loads: the app sends ui/initialize as soon as its script runs.
  document.getElementById("host").replaceChildren(frame);
  const bridge = new AppBridge(null, { name: "cairn-test-host", version: "1.0.0" }, { serverTools: {}, logging: {} },
    { hostContext: { theme, displayMode: "inline", availableDisplayModes: ["inline"] } });
  bridge.oncalltool = (params) => window.hostCallTool(params);
  let resultSent = false;
  bridge.onsizechange = ({ height }) => {
    if (height !== undefined) frame.style.height = height + "px";
    if (resultSent && timings.rendered === 0) { timings.rendered = performance.now() - started; resolve(timings); }
  };
  bridge.oninitialized = async () => {
    timings.initialized = performance.now() - started;
    await bridge.sendToolInput({ arguments: input });
    resultSent = true;
    timings.result = performance.now() - started;
    await bridge.sendToolResult(result);
  };
  window.appBridge = bridge;
  bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow)).catch(reject);
  frame.src = "/app";
});
`;

/** Bundles the host script (ext-apps and its SDK peers resolve from the repository, or NODE_PATH). */
async function hostBundle() {
  const out = await build({
    stdin: { contents: HOST_SCRIPT, resolveDir: ROOT, loader: "js" },
    bundle: true,
    format: "iife",
    write: false,
    minify: true,
    nodePaths: (process.env.NODE_PATH ?? "").split(":").filter(Boolean),
  });
  return out.outputFiles[0]?.text ?? "";
}

/**
 * The CSP a host applies to an app from its resource's `_meta.ui.csp` (the extension's mapping): no domain listed,
 * no network at all; inline script and style, since the app is one self-contained document.
 * @param {{connectDomains?: string[], resourceDomains?: string[], frameDomains?: string[]} | undefined} csp
 */
export function appCsp(csp) {
  const list = (/** @type {string[] | undefined} */ domains) =>
    domains && domains.length > 0 ? domains.join(" ") : "'none'";
  const resources = csp?.resourceDomains?.length ? ` ${csp.resourceDomains.join(" ")}` : "";
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline'${resources}`,
    `style-src 'unsafe-inline'${resources}`,
    `img-src data:${resources}`,
    `font-src${resources || " 'none'"}`,
    `connect-src ${list(csp?.connectDomains)}`,
    `frame-src ${list(csp?.frameDomains)}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

/**
 * Starts the host: a loopback server for the host page and the app, and Chromium on it.
 * @param {{ appHtml: string, csp: Record<string, string[]> | undefined, callTool: (params: {name: string, arguments?: Record<string, unknown>}) => Promise<unknown>, viewport?: {width: number, height: number} }} options
 */
export async function startAppsHost(options) {
  const script = await hostBundle();
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test host</title></head>
<body style="margin:0;padding:8px;font-family:sans-serif"><main id="host"></main><script>${script.replaceAll("</script", "<\\/script")}</script></body></html>`;
  const csp = appCsp(options.csp);
  const server = createServer((request, response) => {
    if (request.url === "/app") {
      response.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp });
      response.end(options.appHtml);
    } else if (request.url === "/") {
      response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      response.end(page);
    } else if (request.url === "/favicon.ico") {
      response.writeHead(204).end();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
  const tab = await context.newPage();
  /** @type {string[]} */
  const problems = [];
  /** @type {{name: string, arguments?: Record<string, unknown>}[]} */
  const calls = [];
  /** @type {string[]} */
  const requests = [];
  tab.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  tab.on("pageerror", (error) => problems.push(`page: ${error.message}`));
  tab.on("request", (request) => requests.push(request.url()));
  await tab.exposeFunction(
    "hostCallTool",
    async (/** @type {{name: string, arguments?: Record<string, unknown>}} */ params) => {
      calls.push(params);
      return options.callTool(params);
    },
  );
  await tab.goto(`http://127.0.0.1:${port}/`);
  return {
    page: tab,
    calls,
    problems,
    requests,
    origin: `http://127.0.0.1:${port}`,
    /** The app's frame (its document, for locators and axe). */
    frame() {
      const frame = tab.frames().find((f) => f.url().endsWith("/app"));
      if (frame === undefined) throw new Error("the app's frame is not there");
      return frame;
    },
    /**
     * Renders the app for one tool call: its input and its result, as the host received them.
     * @param {Record<string, unknown>} input
     * @param {unknown} result
     * @returns {Promise<{started: number, initialized: number, result: number, rendered: number}>} milliseconds from the frame's creation: to the handshake's end, to the result sent, to the app's first drawing of it
     */
    render(input, result, theme = "light") {
      return tab.evaluate(
        ([i, r, t]) => /** @type {any} */ (globalThis).renderApp(i, r, t),
        /** @type {[Record<string, unknown>, unknown, string]} */ ([input, result, theme]),
      );
    },
    /**
     * A full-page screenshot once the app's frame has painted all of its drawing: Chromium paints a frame only near
     * the viewport, so the viewport takes the page's whole height for the picture, then returns.
     * @param {string} path
     */
    async screenshot(path) {
      const viewport = tab.viewportSize() ?? { width: 1280, height: 900 };
      // Run in the browser: its globals are typed loosely here, as in render's evaluate.
      const height = await tab.evaluate(() => /** @type {any} */ (globalThis).document.documentElement.scrollHeight);
      await tab.setViewportSize({ width: viewport.width, height: Math.max(height, viewport.height) });
      const painted = () =>
        new Promise((resolve) => {
          const window = /** @type {any} */ (globalThis);
          window.requestAnimationFrame(() => window.requestAnimationFrame(resolve));
        });
      const frame = tab.frames().find((f) => f.url().endsWith("/app"));
      await frame?.evaluate(painted);
      await tab.evaluate(painted);
      await tab.screenshot({ path, fullPage: true });
      await tab.setViewportSize(viewport);
    },
    async close() {
      await browser.close();
      await new Promise((resolve) => server.close(() => resolve(undefined)));
    },
  };
}
