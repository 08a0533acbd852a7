/** Actions worth a permanent record of who did what and when. */
export type AuditAction =
  | 'token.issued'
  | 'token.refused'
  | 'api.auth_failed'
  /** Refusal (429) of failed authentication began for an address or a client id: one row per key and window. */
  | 'auth.throttled'
  | 'account.created'
  | 'account.plan_changed'
  | 'account.disabled'
  | 'account.enabled'
  | 'account.trust_changed'
  /** An account's data exported (its owner from the dashboard, or the operator); closed and erased, audited with counts only. */
  | 'account.exported'
  | 'account.closed'
  | 'client.created'
  | 'client.secret_reset'
  | 'client.deleted'
  | 'plan.saved'
  | 'ingest_url.created'
  | 'ingest_url.revoked'
  /** A new signing key replaced the current one (`tollwatch keys rotate`). */
  | 'key.rotated'
  /** The operator imported a SentryPeer log or database into an account (`tollwatch import`). */
  | 'events.imported'
  /** Dashboard users (docs/dashboard.md): invited, a password set through a link, a reset link issued, disabled or enabled, signed up. */
  | 'user.invited'
  | 'user.password_set'
  | 'user.password_reset'
  | 'user.disabled'
  | 'user.role_changed'
  | 'user.enabled'
  | 'user.signed_up'
  | 'user.signed_in'
  | 'user.sign_in_failed'
  | 'user.signed_out_everywhere'
  /** Two-factor sign-in (docs/dashboard.md): enrolled, turned off, a recovery code spent, new codes made, reset by the operator, required by an owner. */
  | 'user.two_factor_enabled'
  | 'user.two_factor_disabled'
  | 'user.recovery_code_used'
  | 'user.recovery_codes_regenerated'
  | 'user.two_factor_reset'
  | 'account.two_factor_required'
  /** An account's alert integrations (docs/api.md §12): made, changed, deleted, an email address confirmed. */
  | 'integration.created'
  | 'integration.updated'
  | 'integration.deleted'
  | 'integration.confirmed'
  | 'integration.redelivered'
  | 'integration.disabled'
  | 'integration.enabled'
  | 'integration.secret_rotated'
  /** An entry added to or removed from an allowlist, an account's or the operator's (docs/api.md §16). */
  | 'allowlist.entry_added'
  | 'allowlist.entry_removed'
  /** A node named (or its name forgotten) by an account's owner. */
  | 'node.named'
  /** False-positive reports (docs/api.md §17): submitted by a client, accepted or rejected by the operator. */
  | 'report.submitted'
  | 'report.accepted'
  | 'report.rejected'
  /** Peers, the TAXII 2.1 servers this one reads (docs/federation.md): added, changed, removed, enabled, disabled by the operator. */
  | 'peer.added'
  | 'peer.changed'
  | 'peer.removed'
  | 'peer.enabled'
  | 'peer.disabled'
  /** Requests for the contributor plan (docs/dashboard.md, "Becoming a contributor"): made by an owner, approved or declined. */
  | 'contributor.requested'
  | 'contributor.approved'
  | 'contributor.declined'
  /** An account joins the contributors' board under an alias its owner chose, or leaves it. */
  | 'board.joined'
  | 'board.left';

/**
 * The rows failed authentication writes: anyone who can reach the service can add them, from
 * as many addresses as they have, so they are capped in number as well as kept for a time.
 */
export const FAILURE_ACTIONS: readonly AuditAction[] = ['token.refused', 'api.auth_failed', 'auth.throttled', 'user.sign_in_failed'];

/** How long audit rows are kept, and how many failure rows at most (docs/operations.md, Retention). */
export interface AuditRetentionPolicy {
  /** Rows older than this many days are removed, whatever their action. */
  days: number;
  /** Only the newest this many rows of FAILURE_ACTIONS are kept. */
  maxFailureRows: number;
}

export interface AuditEntry {
  action: AuditAction;
  /** Who acted: `operator` (CLI), `client:<id>`, `user:<id>` (the dashboard), or `anonymous`. */
  actor: string;
  accountId?: string | null;
  clientId?: string | null;
  ip?: string | null;
  detail?: Record<string, unknown>;
}

/** One stored audit entry as the operator reads it back (docs/api.md §10). */
export interface AuditRecord {
  id: number;
  /** ISO 8601 time of recording. */
  at: string;
  action: AuditAction;
  actor: string;
  account_id: string | null;
  client_id: string | null;
  ip: string | null;
  detail: Record<string, unknown> | null;
}

/** Which audit entries to list. */
export interface AuditQuery {
  /** Only entries about this account. */
  accountId?: string;
  /** At most this many, the newest. */
  limit: number;
}

/** Where audit entries go: the store's audit table and the structured log. */
export interface AuditTrail {
  record(entry: AuditEntry): Promise<void>;
  /** The newest entries first. */
  list(query: AuditQuery): Promise<AuditRecord[]>;
}

/** An audit trail that keeps nothing, for code paths that need one but audit nothing. */
export const NO_AUDIT: AuditTrail = { record: async () => {}, list: async () => [] };
