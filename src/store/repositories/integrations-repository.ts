import type { Kysely, Selectable } from 'kysely';
import type { AlertType } from '../../domain/alerts/alerts.ts';
import type { DeliveryAttemptView, IntegrationKind, IntegrationPatch, IntegrationsRepository, StoredIntegration } from '../../domain/alerts/integrations.ts';
import type { KeySealer } from '../../domain/accounts/key-sealing.ts';
import type { IntegrationsTable, Schema } from '../schema.ts';

/** Where a webhook's sealed secret belongs: sealed for this row, it opens nowhere else. */
export const integrationSecretContext = (id: string) => `integrations/${id}`;

/** Integrations in the SQL store; webhook secrets sealed with the key secret. */
export class SqlIntegrationsRepository implements IntegrationsRepository {
  private readonly db: Kysely<Schema>;
  private readonly sealer: KeySealer;

  constructor(db: Kysely<Schema>, sealer: KeySealer) {
    this.db = db;
    this.sealer = sealer;
  }

  async insert(i: StoredIntegration): Promise<void> {
    await this.db
      .insertInto('integrations')
      .values({ ...i, alert_types: i.alert_types.join(' '), secret: this.sealed(i.id, i.secret), previous_secret: this.sealed(i.id, i.previous_secret) })
      .execute();
  }

  async find(accountId: string, id: string): Promise<StoredIntegration | undefined> {
    const row = await this.db.selectFrom('integrations').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && this.integrationOf(row);
  }

  async list(accountId: string): Promise<StoredIntegration[]> {
    const rows = await this.db.selectFrom('integrations').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
    return rows.map((row) => this.integrationOf(row));
  }

  /** Its deliveries and their log go with it: the log is the owner's, and the owner is done with it. */
  async delete(accountId: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx.deleteFrom('integrations').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await trx.deleteFrom('delivery_attempts').where('integration_id', '=', id).execute();
      await trx.deleteFrom('alert_deliveries').where('integration_id', '=', id).execute();
      return true;
    });
  }

  async update(accountId: string, id: string, patch: IntegrationPatch): Promise<boolean> {
    const { target } = patch;
    if (patch.name === undefined && patch.alert_types === undefined && patch.min_score === undefined && patch.disabled === undefined && target === undefined) return true;
    const result = await this.db
      .updateTable('integrations')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.alert_types !== undefined ? { alert_types: patch.alert_types.join(' ') } : {}),
        ...(patch.min_score !== undefined ? { min_score: patch.min_score } : {}),
        ...(patch.disabled !== undefined ? { disabled_at: patch.disabled?.at ?? null, disabled_reason: patch.disabled?.reason ?? null } : {}),
        ...(target !== undefined ? { target: target.value } : {}),
        // A new address is unconfirmed from this statement on: no delivery reaches it before its link is followed.
        ...(target?.confirmation ? { confirmed_at: null, confirm_hash: target.confirmation.hash, confirm_expires_at: target.confirmation.expires_at } : {}),
      })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async rotateSecret(accountId: string, id: string, secret: string, previousUntil: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('integrations').select('secret').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      if (!row) return false;
      // The secret signing now becomes the previous one, sealed as it was (same row, same context).
      await trx
        .updateTable('integrations')
        .set({ secret: this.sealed(id, secret), previous_secret: row.secret, previous_secret_until: previousUntil })
        .where('id', '=', id)
        .execute();
      return true;
    });
  }

  async confirm(confirmHash: string, at: string): Promise<StoredIntegration | undefined> {
    const row = await this.db.selectFrom('integrations').selectAll().where('confirm_hash', '=', confirmHash).executeTakeFirst();
    if (!row || row.confirm_expires_at === null || row.confirm_expires_at < at) return undefined;
    // The hash is cleared with the confirmation: a link works once.
    const result = await this.db
      .updateTable('integrations')
      .set({ confirmed_at: at, confirm_hash: null, confirm_expires_at: null })
      .where('id', '=', row.id)
      .where('confirm_hash', '=', confirmHash)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n ? this.integrationOf({ ...row, confirmed_at: at }) : undefined;
  }

  async attempts(integrationId: string, limit: number): Promise<DeliveryAttemptView[]> {
    const rows = await this.db
      .selectFrom('delivery_attempts as a')
      .innerJoin('alert_deliveries as d', 'd.id', 'a.delivery_id')
      .innerJoin('alerts as al', 'al.id', 'd.alert_id')
      .select(['a.delivery_id', 'd.alert_id', 'al.type as alert_type', 'a.attempt', 'a.at', 'a.duration_ms', 'a.status_code', 'a.error', 'a.outcome'])
      .where('a.integration_id', '=', integrationId)
      .orderBy('a.id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      ...r,
      attempt: Number(r.attempt),
      duration_ms: Number(r.duration_ms),
      status_code: r.status_code === null ? null : Number(r.status_code),
      outcome: r.outcome as DeliveryAttemptView['outcome'],
    }));
  }

  async redeliver(integrationId: string, deliveryId: string, at: string): Promise<{ id: string } | 'pending' | undefined> {
    const old = await this.db
      .selectFrom('alert_deliveries as d')
      .innerJoin('alerts as a', 'a.id', 'd.alert_id')
      .select(['d.alert_id', 'd.account_id', 'd.status'])
      .where('d.id', '=', deliveryId)
      .where('d.integration_id', '=', integrationId)
      .executeTakeFirst();
    if (!old) return undefined;
    if (old.status === 'pending') return 'pending';
    const id = crypto.randomUUID();
    await this.db
      .insertInto('alert_deliveries')
      .values({ id, alert_id: old.alert_id, integration_id: integrationId, account_id: old.account_id, status: 'pending', attempts: 0, next_attempt_at: at, claimed_until: null, created_at: at })
      .execute();
    return { id };
  }

  private sealed(id: string, secret: string | null): string | null {
    return secret === null ? null : this.sealer.seal(secret, integrationSecretContext(id));
  }

  private integrationOf(row: Selectable<IntegrationsTable>): StoredIntegration {
    return {
      ...row,
      kind: row.kind as IntegrationKind,
      alert_types: row.alert_types.split(' ').filter(Boolean) as AlertType[],
      secret: row.secret === null ? null : this.sealer.open(row.secret, integrationSecretContext(row.id)),
      previous_secret: row.previous_secret === null ? null : this.sealer.open(row.previous_secret, integrationSecretContext(row.id)),
      min_score: Number(row.min_score),
    };
  }
}
