/** Every permission a client may hold (docs/api.md §3). */
export const PERMISSIONS = ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses', 'manage:integrations', 'manage:allowlist', 'write:reports'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** Narrows a string to a known permission. */
export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/**
 * Permissions only given when named: managing integrations decides where the account's alerts
 * (and the data in them) are sent, and managing the allowlist decides which numbers and
 * addresses the account's call guard lets through whatever their score. Neither is for a client
 * made for lookups, nor for a node, whose credentials sit on a honeypot an attacker probes: one
 * that could allowlist would let its thief open the guard to any number.
 */
const NAMED_ONLY: readonly Permission[] = ['manage:integrations', 'manage:allowlist'];

/**
 * Permissions a new client gets when none are named: submitting only where the plan allows it.
 * `write:reports` is among them: the client that looks values up is the one that meets a false
 * positive, and a report changes nothing until the operator accepts it.
 */
export function defaultPermissions(maySubmit: boolean): Permission[] {
  return PERMISSIONS.filter((p) => !NAMED_ONLY.includes(p) && (maySubmit || p !== 'write:events'));
}
