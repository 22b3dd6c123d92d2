/// <reference lib="dom" />
// What the lineage and approval apps share about their frame: the host's theme and tool, a reply's text and JSON,
// a one-line note, and telling the host the height of what is drawn.
import type { AppChannel, ToolResult } from "./app-channel.js";

/** The tool whose result the app renders, as the host's context names it. */
export function applyHostContext(context: Record<string, unknown>): string | undefined {
  if (context.theme === "dark" || context.theme === "light") document.documentElement.dataset.theme = context.theme;
  const info = context.toolInfo as { tool?: { name?: unknown } } | undefined;
  return typeof info?.tool?.name === "string" ? info.tool.name : undefined;
}

/** A reply's first text block parsed as JSON, or undefined. */
export function replyJson(result: ToolResult): unknown {
  const text = result.content?.find((block) => block.type === "text")?.text;
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A reply's `error` ({code, message}), when it is one. */
export function replyError(result: ToolResult): { code: string; message: string } | undefined {
  const error = (replyJson(result) as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (error === undefined) return result.isError ? { code: "ERROR", message: "the call failed" } : undefined;
  return { code: String(error.code ?? "ERROR"), message: String(error.message ?? "") };
}

/** Reports the drawn height to the host on every drawing and whenever it changes. */
export class FrameSize {
  private last = 0;
  constructor(
    private readonly root: HTMLElement,
    private readonly channel: AppChannel,
  ) {
    new ResizeObserver(() => this.report()).observe(root);
  }

  report(force = false): void {
    const style = getComputedStyle(this.root);
    const height = Math.ceil(this.root.getBoundingClientRect().bottom + Number.parseFloat(style.marginBottom || "0"));
    if (height === this.last && !force) return;
    this.last = height;
    this.channel.sizeChanged(Math.ceil(document.documentElement.scrollWidth), height);
  }
}

/** Replaces the view with one line of text. */
export function showNote(root: HTMLElement, text: string): void {
  root.replaceChildren();
  const p = document.createElement("p");
  p.className = "note";
  p.textContent = text;
  root.append(p);
}
