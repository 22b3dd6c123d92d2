// The tables a SQL operation reads: 1 to 8 artifacts, seen by the SQL as input1..inputN.
import { z } from "zod";
import { SQL_LIMITS } from "../../workspace/limits.js";

export const SqlInputs = z
  .array(z.string())
  .min(1)
  .max(SQL_LIMITS.inputs)
  .describe(`1 to ${SQL_LIMITS.inputs} CSV, Parquet or JSON artifacts (names or ws_ ids), seen as input1..inputN.`);
