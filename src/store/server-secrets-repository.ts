import type { Kysely } from 'kysely';
import type { ServerSecretName, ServerSecrets } from '../domain/server-secrets.ts';
import type { Schema } from './schema.ts';

/** Server secrets in the SQL store, made by migration 005. */
export class SqlServerSecrets implements ServerSecrets {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async read(name: ServerSecretName): Promise<Uint8Array> {
    const row = await this.db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
    if (!row) throw new Error(`the store holds no ${name} secret; its migrations have not run`);
    return Buffer.from(row.value, 'base64');
  }
}
