import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { KeySealer } from '../../domain/accounts/key-sealing.ts';
import { SERVER_SECRET_BYTES, type ServerSecretName, type ServerSecrets } from '../../domain/accounts/server-secrets.ts';
import { serverSecretContext } from '../../domain/accounts/key-sealing.ts';
import type { Schema } from '../schema.ts';

/** Server secrets in the SQL store, sealed with the key secret (src/store/maintenance/keys-at-rest.ts). */
export class SqlServerSecrets implements ServerSecrets {
  private readonly db: Kysely<Schema>;
  private readonly sealer: KeySealer;

  constructor(db: Kysely<Schema>, sealer: KeySealer) {
    this.db = db;
    this.sealer = sealer;
  }

  async read(name: ServerSecretName): Promise<Uint8Array> {
    // Migration 005 made the cursor key; a store re-keyed by deleting its keys makes it anew
    // here. Instances racing to do so insert-if-absent, and all read the one that won.
    let row = await this.find(name);
    if (!row) {
      const value = this.sealer.seal(randomBytes(SERVER_SECRET_BYTES[name]).toString('base64'), serverSecretContext(name));
      await this.db.insertInto('server_secrets').values({ name, value }).onConflict((oc) => oc.column('name').doNothing()).execute();
      row = await this.find(name);
      if (!row) throw new Error(`the store holds no ${name} secret`);
    }
    return Buffer.from(this.sealer.read(row.value, serverSecretContext(name)), 'base64');
  }

  private find(name: ServerSecretName) {
    return this.db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  }
}
