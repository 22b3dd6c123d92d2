// CapabilityRegistry: lookup, ranked search over thousands of tools, hidden capabilities and "did you mean".
// The large catalog comes from the many-tools fixture server, loaded through a real UpstreamManager.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import type { Capability } from "../../src/registry/capability.js";
import { canonicalName, splitCanonicalName } from "../../src/registry/capability.js";
import { createCapabilityRegistry } from "../../src/registry/capability-registry.js";
import { followUpstreams } from "../../src/upstream/upstream-capabilities.js";
import { createUpstreamManager } from "../../src/upstream/upstream-manager.js";
import { generateToolSpecs } from "../fixtures/servers/generated-tools.mjs";

const here = dirname(fileURLToPath(import.meta.url));

function generatedCapabilities(count: number, server = "many"): Capability[] {
  return generateToolSpecs(count).map((spec) => ({
    name: canonicalName(server, spec.name),
    server,
    tool: spec.name,
    description: spec.description,
    inputSchema: {
      type: "object",
      properties: Object.fromEntries(spec.params.map(([name, type, description]) => [name, { type, description }])),
    },
  }));
}

const HIDDEN: Capability = {
  name: "cairn:results/save",
  description: "Saves a JSON value in the result store and returns its handle",
  inputSchema: { type: "object", properties: { value: {}, label: { type: "string" } } },
  hidden: true,
};

describe("CapabilityRegistry", () => {
  it("reads no input schema before the first search, and then finds what was added before and after it", () => {
    let reads = 0;
    const counted = (name: string, description: string, param: string): Capability => ({
      name,
      server: name.split(".")[0] as string,
      tool: name.split(".")[1] as string,
      description,
      get inputSchema() {
        reads++;
        return { type: "object", properties: { [param]: { type: "string" } } };
      },
    });
    const registry = createCapabilityRegistry([counted("ws.save", "Saves a version", "label")]);
    registry.add(counted("ws.find", "Full-text search", "needle"));
    expect(registry.get("ws.find")?.description).toBe("Full-text search");
    expect(registry.suggest("ws.fnd")).toContain("ws.find");
    expect(reads).toBe(0);
    expect(registry.search("needle").map((h) => h.name)).toEqual(["ws.find"]);
    registry.add(counted("ws.drop", "Deletes a version", "needle"));
    registry.remove("ws.find");
    expect(registry.search("needle").map((h) => h.name)).toEqual(["ws.drop"]);
    expect(registry.search("label").map((h) => h.name)).toEqual(["ws.save"]);
  });

  it("ranks the tool whose name and description match the query first among 5,000", () => {
    const registry = createCapabilityRegistry(generatedCapabilities(5000));
    expect(registry.size).toBe(5000);
    expect(registry.search("list github issues", 5)[0]?.name).toBe("many.github_list_issues");
    expect(registry.search("create a Stripe invoice", 5)[0]?.name).toBe("many.stripe_create_invoices");
    expect(registry.search("slack messages search", 3).map((h) => h.name)).toContain("many.slack_search_messages");
  });

  it("splits snake_case, camelCase and dotted queries into words", () => {
    const registry = createCapabilityRegistry(generatedCapabilities(5000));
    expect(registry.search("jira_archive_tickets", 1)[0]?.name).toBe("many.jira_archive_tickets");
    expect(registry.search("jiraArchiveTickets", 1)[0]?.name).toBe("many.jira_archive_tickets");
    expect(registry.search("many.jira_archive_tickets", 1)[0]?.name).toBe("many.jira_archive_tickets");
  });

  it("matches parameter names, prefixes and small typos", () => {
    const registry = createCapabilityRegistry(generatedCapabilities(5000));
    const byParam = registry.search("assigneeEmail linear", 10).map((h) => h.name);
    expect(byParam.every((name) => name.includes("_assign_"))).toBe(true);
    expect(registry.search("pagerd incid", 3)[0]?.name).toMatch(/^many\.pagerduty_\w+_incidents$/);
    expect(registry.search("datadgo dashbaords", 3)[0]?.name).toMatch(/^many\.datadog_\w+_dashboards$/);
  });

  it("puts an exact canonical name first and honours the limit", () => {
    const registry = createCapabilityRegistry(generatedCapabilities(500));
    const hits = registry.search("many.github_get_users", 4);
    expect(hits).toHaveLength(4);
    expect(hits[0]?.name).toBe("many.github_get_users");
    expect(registry.search("   ", 10)).toEqual([]);
  });

  it("keeps hidden capabilities out of search and list but resolves them by name", () => {
    const registry = createCapabilityRegistry([...generatedCapabilities(10), HIDDEN]);
    expect(registry.get("cairn:results/save")).toBe(HIDDEN);
    expect(registry.list().map((c) => c.name)).not.toContain("cairn:results/save");
    expect(registry.search("save result handle", 10).map((h) => h.name)).not.toContain("cairn:results/save");
    expect(registry.search("cairn:results/save", 10).map((h) => h.name)).not.toContain("cairn:results/save");
    expect(registry.suggest("cairn:results/sav")).toEqual(["cairn:results/save"]);
  });

  it("replaces one server's capabilities without touching the others", () => {
    const registry = createCapabilityRegistry([...generatedCapabilities(20, "a"), ...generatedCapabilities(20, "b")]);
    registry.replaceServer("a", [
      { name: "a.ping", server: "a", tool: "ping", description: "Checks the connection", inputSchema: {} },
    ]);
    expect(
      registry
        .list()
        .filter((c) => c.server === "a")
        .map((c) => c.name),
    ).toEqual(["a.ping"]);
    expect(registry.list().filter((c) => c.server === "b")).toHaveLength(20);
    expect(registry.search("github issues", 50).every((h) => h.name.startsWith("b."))).toBe(true);
    expect(registry.search("connection", 1)[0]?.name).toBe("a.ping");
  });

  it("suggests close names for a typo or a missing namespace", () => {
    const registry = createCapabilityRegistry(generatedCapabilities(5000));
    expect(registry.suggest("many.github_list_isues")[0]).toBe("many.github_list_issues");
    expect(registry.suggest("github_list_issues")[0]).toBe("many.github_list_issues");
    expect(registry.suggest("many.issues_list_github")).toContain("many.github_list_issues");
    expect(registry.suggest("zzzz_qqqq")).toEqual([]);
  });

  it("compares only the tool part within one namespace: a shared prefix is no likeness", () => {
    const cap = (server: string, tool: string) => ({
      name: `${server}.${tool}`,
      server,
      tool,
      description: tool,
      inputSchema: { type: "object" },
    });
    const registry = createCapabilityRegistry([cap("cli", "jq"), cap("cli", "git"), cap("everything", "get-sum")]);
    expect(registry.suggest("cli.rm")).toEqual([]);
    expect(registry.suggest("cli.gitt")).toEqual(["cli.git"]);
    expect(registry.suggest("everything.getsum")).toEqual(["everything.get-sum"]);
  });

  it("resolves an alias to its capability, and forgets it with the capability", () => {
    const schema = { type: "object" };
    const registry = createCapabilityRegistry([
      {
        name: "srv.get-sum",
        server: "srv",
        tool: "get-sum",
        alias: "get_sum",
        description: "Adds",
        inputSchema: schema,
      },
    ]);
    expect(registry.get("srv.get_sum")?.name).toBe("srv.get-sum");
    expect(registry.list().map((c) => c.name)).toEqual(["srv.get-sum"]);
    registry.replaceServer("srv", [
      { name: "srv.get_sum", server: "srv", tool: "get_sum", description: "A real tool now", inputSchema: schema },
    ]);
    expect(registry.get("srv.get_sum")?.description).toBe("A real tool now");
    expect(registry.get("srv.get-sum")).toBeUndefined();
  });

  it("suggests nothing for a giant name instead of comparing it with every capability", () => {
    const registry = createCapabilityRegistry(generatedCapabilities(5000));
    expect(registry.suggest(`many.${"x".repeat(1_000_000)}`)).toEqual([]);
  });

  it("follows an upstream server's tools through followUpstreams", async () => {
    const manager = createUpstreamManager({
      many: {
        command: process.execPath,
        args: [join(here, "../fixtures/servers/many-tools.mjs"), "2000"],
        env: {},
        timeout_ms: 30_000,
        allow: [],
        deny: [],
      } as ServerConfig,
    });
    try {
      await manager.start();
      const registry = createCapabilityRegistry();
      followUpstreams(manager, registry);
      expect(registry.size).toBe(2000);
      const [top] = registry.search("export notion alerts", 1);
      expect(top?.name).toBe("many.notion_export_alerts");
      expect(registry.get("many.notion_export_alerts")?.inputSchema).toMatchObject({ type: "object" });
    } finally {
      await manager.close();
    }
  });
});

describe("canonical names", () => {
  it("split at the first dot, so tool names may hold dots", () => {
    expect(splitCanonicalName("odd.2fa.check")).toEqual({ server: "odd", tool: "2fa.check" });
    expect(splitCanonicalName("cairn:results/save")).toBeUndefined();
  });
});
