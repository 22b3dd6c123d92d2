// The html template escapes by default: values from the workspace never become markup, in text or in attributes.
import { describe, expect, it } from "vitest";
import { escapeHtml, html } from "../../src/views/html.js";

describe("html", () => {
  it("escapes every interpolated string, in content and in double-quoted attributes", () => {
    const name = `"><script>alert('x')</script>&`;
    const out = html`<a title="${name}">${name}</a>`.toString();
    expect(out).toBe(
      '<a title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;</a>',
    );
    expect(out).not.toContain("<script>");
  });

  it("inserts markup it made as it is, arrays item by item, and nothing for null, undefined and false", () => {
    const items = ["<a>", "b"].map((t) => html`<li>${t}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.toString()).toBe(
      "<ul><li>&lt;a&gt;</li><li>b</li></ul>0",
    );
  });

  it("treats a string that looks like markup as text, however it was built", () => {
    const fake = { toString: () => "<b>not trusted</b>" };
    expect(html`${fake}`.toString()).toBe("&lt;b&gt;not trusted&lt;/b&gt;");
    expect(escapeHtml("a&b<c>\"d'")).toBe("a&amp;b&lt;c&gt;&quot;d&#39;");
  });
});
