// The names of the tool profiles (`cairn serve --profile`, `profile =` in cairn.toml); what each holds is in
// server/profiles.ts. Kept apart from the schema so the command line can check a name without loading zod.
export const PROFILE_NAMES = ["minimal", "agent", "runtime", "full"] as const;
export type Profile = (typeof PROFILE_NAMES)[number];
