// Cairn's log: one line per event on stderr (stdout is the MCP channel on stdio and must carry nothing else).
// Quiet by default; `CAIRN_LOG=debug|info|warn|error|silent` changes the threshold.

export type LogLevel = "debug" | "info" | "warn" | "error";

const RANK: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry `component`. */
  child(component: string): Logger;
}

function threshold(): number {
  const wanted = (process.env.CAIRN_LOG ?? "warn").toLowerCase();
  return wanted in RANK ? RANK[wanted as LogLevel] : RANK.warn;
}

/** Creates a logger writing `time level [component] message {fields}` lines to stderr. */
export function createLogger(
  component = "cairn",
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const min = threshold();
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < min) return;
    let extra = "";
    if (fields && Object.keys(fields).length > 0) {
      try {
        extra = ` ${JSON.stringify(fields)}`;
      } catch {
        extra = " {unserializable fields}";
      }
    }
    write(`${new Date().toISOString()} ${level} [${component}] ${message}${extra}\n`);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (name) => createLogger(`${component}:${name}`, write),
  };
}
