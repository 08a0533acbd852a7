/** Every permission a client may hold (docs/api.md §3). */
export const PERMISSIONS = ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** Narrows a string to a known permission. */
export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/** Permissions a new client gets when none are named: submitting only where the plan allows it. */
export function defaultPermissions(maySubmit: boolean): Permission[] {
  return maySubmit ? [...PERMISSIONS] : PERMISSIONS.filter((p) => p !== 'write:events');
}
