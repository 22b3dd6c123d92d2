// Test helper: the CairnError a promise rejects with; anything else (or a success) fails the test.
import { CairnError } from "../../src/errors.js";

export async function caught(promise: Promise<unknown>): Promise<CairnError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CairnError) return error;
    throw error;
  }
  throw new Error("expected a CairnError, got success");
}
