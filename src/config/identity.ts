// Who calls Cairn: an identity (a name a write records) and its role, ordered reader < writer < approver. Kept in
// config/ because every layer (the session, the transports, the operations) reads it and none may import another.
import { userInfo } from "node:os";

export const ROLES = ["reader", "writer", "approver"] as const;
export type Role = (typeof ROLES)[number];

/** Who calls: the identity a write records and the role that decides which operations it may call. */
export interface Actor {
  name: string;
  role: Role;
}

/** Identity names: what a ledger row or a claim records, short and printable. */
export const IDENTITY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** True when `have` includes `need`: an approver may do what a writer may, a writer what a reader may. */
export function roleAllows(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/** The local account's name (the default identity), or "local" when the system gives none usable. */
export function localAccountName(): string {
  try {
    const name = userInfo().username;
    return IDENTITY_NAME_PATTERN.test(name) ? name : "local";
  } catch {
    return "local";
  }
}

/** Who this process acts as: [identity] of cairn.toml, its name defaulting to the local account's. */
export function configuredActor(identity: { name?: string | undefined; role: Role }): Actor {
  return { name: identity.name ?? localAccountName(), role: identity.role };
}
