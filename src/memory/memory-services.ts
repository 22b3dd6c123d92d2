// What the memory operations reach beyond the workspace: the process's capture (its health, and a flush so a recall
// sees the run that just ended) and the embedder `[memory] model_dir` provisions, loaded on first use.
import type { CaptureHealth } from "./capture.js";
import type { Embedder } from "./embedder.js";
import type { RecallCounter } from "./recall-coverage.js";

export interface MemoryServices {
  capture: {
    readonly enabled: boolean;
    health(): CaptureHealth;
    /** Resolves once every observation handed to capture so far is written or has failed. Never throws. */
    flush(): Promise<void>;
  };
  /** The provisioned embedder, or undefined without `[memory] model_dir`; CONFIG_INVALID when it cannot load. */
  embedder(): Promise<Embedder | undefined>;
  /** What recall calls of this process covered (metrics' recall coverage). */
  recalls: RecallCounter;
}
