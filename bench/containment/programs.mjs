// Containment family "programs": snippets whose program tries to outlive its call (daemons, double forks, ignored
// SIGTERM, held pipes, a fork loop, a flood past max_concurrent). Every bomb must end in TOOL_TIMEOUT at the program
// deadline (1 s, plus the 2 s kill grace at most) and leave no `sleep 1000.*` process behind.
// The shell is opted into any arguments here only: that is the attacker's program.

/** @import { Family } from "../containment.mjs" */

const DEADLINE_MS = 1000;

/**
 * A snippet that runs one shell script through cli.sh and lets its error reach the reply.
 * @param {string} script
 */
const shell = (script) => `return await cli.sh("-c", ${JSON.stringify(script)});`;

/** @type {Family} */
export const family = {
  name: "programs",
  configToml: `[cli]
mode = "allowlist"
allow = ["sh"]
timeout_ms = ${DEADLINE_MS}
max_concurrent = 4

[cli.programs.sh]
allow_any_arguments = true
`,
  bombs: [
    {
      name: "daemons: 20 setsid sleepers, then the program waits",
      tool: "execute_code",
      args: { code: shell("for i in $(seq 20); do setsid sleep 1000.1 & done; sleep 1000.1") },
      expectCode: "TOOL_TIMEOUT",
    },
    {
      name: "double fork with nohup, then the program waits",
      tool: "execute_code",
      args: { code: shell("(nohup sleep 1000.2 >/dev/null 2>&1 &); sleep 1000.2") },
      expectCode: "TOOL_TIMEOUT",
    },
    {
      name: "ignores SIGTERM, and so do its children",
      tool: "execute_code",
      args: { code: shell("trap '' TERM; sleep 1000.3 & sleep 1000.3") },
      expectCode: "TOOL_TIMEOUT",
    },
    {
      name: "pipe holder: a setsid descendant keeps stdout open",
      tool: "execute_code",
      args: { code: shell("setsid sh -c 'trap \"\" TERM; sleep 1000.4' & sleep 1000.4") },
      expectCode: "TOOL_TIMEOUT",
    },
    {
      name: "fork loop until the deadline",
      tool: "execute_code",
      args: { code: shell("while :; do setsid sleep 1000.5 & done") },
      expectCode: "TOOL_TIMEOUT",
    },
    {
      name: "flood: 40 programs at once against max_concurrent = 4",
      tool: "execute_code",
      args: {
        code: `await Promise.all(Array.from({ length: 40 }, () => cli.sh("-c", "sleep 1000.6"))); return "unreachable";`,
      },
      expectCode: "TOOL_TIMEOUT",
    },
  ],
};
