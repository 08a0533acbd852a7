import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { KEY_SECRET_BYTES, KeySealer, newKeySecret, parseKeySecret, serverSecretContext, signingKeyContext, WrongKeySecretError } from '../../domain/accounts/key-sealing.ts';
import type { Database } from '../database.ts';
import type { Schema } from '../schema.ts';
import { createOwnerOnlyFile, isPostgresUrl, keyFilePath, readFileIfPresent, restrictToOwner, storeFilePath } from '../store-files.ts';

/**
 * The key secret that seals the store's keys, and where it came from. Encryption at rest of the
 * token-signing private keys (`signing_keys.private_jwk`) and of the server secrets
 * (`server_secrets.value`, the cursor key): see docs/operations.md, "Keys".
 */
export interface KeySecret {
  sealer: KeySealer;
  /** `TOLLWATCH_KEY_SECRET`, or the key file's path: named in every error about the key. */
  origin: string;
}


/**
 * The key secret of a store: `TOLLWATCH_KEY_SECRET` when configured; otherwise, for a SQLite
 * file, the key file beside it, created (owner only) on the first start. PostgreSQL has no
 * place of its own that every instance shares but the database itself, so it needs the
 * variable. A store whose keys are already sealed never gets a new key file: that would only
 * hide the loss of the old one.
 */
export async function resolveKeySecret(configured: Uint8Array | undefined, databaseUrl: string, database: Database): Promise<KeySecret> {
  if (configured) return { sealer: new KeySealer(configured), origin: 'TOLLWATCH_KEY_SECRET' };
  if (isPostgresUrl(databaseUrl)) {
    throw new Error(
      `TOLLWATCH_KEY_SECRET must be set with PostgreSQL: it encrypts the signing and cursor keys in the database, and every instance and the CLI need the same value (make one with: openssl rand -base64 ${KEY_SECRET_BYTES})`,
    );
  }
  const store = storeFilePath(databaseUrl);
  // An in-memory store lives and dies with this process; so may its key.
  if (!store) return { sealer: new KeySealer(randomBytes(KEY_SECRET_BYTES)), origin: 'the in-memory key of this process' };
  const file = keyFilePath(store);
  let text = readFileIfPresent(file);
  if (text === undefined) {
    if (await holdsSealedKeys(database.db)) {
      throw new Error(
        `the keys in the store are encrypted, but ${file} is missing and TOLLWATCH_KEY_SECRET is unset: restore the key file from the backup made with the store (without it, the store must be re-keyed; see docs/operations.md)`,
      );
    }
    // Two processes starting together on a new store: one writes the file, both read it.
    createOwnerOnlyFile(file, `${newKeySecret()}\n`);
    text = readFileIfPresent(file) ?? '';
  }
  restrictToOwner(file);
  try {
    return { sealer: new KeySealer(parseKeySecret(text)), origin: file };
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
}

/** Whether any key in the store is sealed already. */
async function holdsSealedKeys(db: Kysely<Schema>): Promise<boolean> {
  const keys = await db.selectFrom('signing_keys').select('private_jwk as value').execute();
  const secrets = await db.selectFrom('server_secrets').select('value').execute();
  return [...keys, ...secrets].some((row) => KeySealer.isSealed(row.value));
}

/**
 * Proves the key secret opens every sealed key of the store, and seals the keys still in plain
 * text (written before encryption at rest): the same keys, so issued tokens and cursors stay
 * good. Fails, naming the key's origin, when a sealed key does not open: a server with the
 * wrong key must not start, nor make keys of its own beside ones it cannot read.
 */
export async function sealKeysAtRest(database: Database, { sealer, origin }: KeySecret): Promise<{ sealed: number }> {
  const { db } = database;
  const keys = await db.selectFrom('signing_keys').select(['kid', 'private_jwk']).execute();
  const secrets = await db.selectFrom('server_secrets').select(['name', 'value']).execute();
  const values = [
    ...keys.map((row) => ({ table: 'signing_keys' as const, id: row.kid, value: row.private_jwk, context: signingKeyContext(row.kid) })),
    ...secrets.map((row) => ({ table: 'server_secrets' as const, id: row.name, value: row.value, context: serverSecretContext(row.name) })),
  ];
  for (const { value, context } of values) {
    if (!KeySealer.isSealed(value)) continue;
    try {
      sealer.open(value, context);
    } catch (err) {
      if (!(err instanceof WrongKeySecretError)) throw err;
      throw new Error(
        `the keys in the store do not open with ${origin}: it is not the key they were encrypted with. Restore that key; a new one cannot read them (re-keying invalidates every token and cursor; see docs/operations.md)`,
      );
    }
  }
  const plain = values.filter(({ value }) => !KeySealer.isSealed(value));
  if (plain.length === 0) return { sealed: 0 };
  await scrubbing(database, async () => {
    for (const { table, id, value, context } of plain) {
      // Only if still plain: another instance sealing at the same moment wins harmlessly.
      const sealed = sealer.seal(value, context);
      if (table === 'signing_keys') {
        await db.updateTable('signing_keys').set({ private_jwk: sealed }).where('kid', '=', id).where('private_jwk', '=', value).execute();
      } else {
        await db.updateTable('server_secrets').set({ value: sealed }).where('name', '=', id).where('value', '=', value).execute();
      }
    }
  });
  return { sealed: plain.length };
}

/**
 * Runs updates that replace plain-text keys so that the old bytes do not linger in the store's
 * files. SQLite: `secure_delete` zeroes the space the plain values leave, and a truncating
 * checkpoint writes the pages home and empties the WAL that held them. PostgreSQL keeps old row
 * versions until vacuum: `VACUUM FULL` rewrites both (small) tables without them. Copies made
 * before (backups, WAL archives) still hold them: docs/operations.md says so.
 */
async function scrubbing(database: Database, update: () => Promise<void>): Promise<void> {
  const { db, caps } = database;
  if (caps.scrubFreedSpace === 'secure_delete') {
    await sql`PRAGMA secure_delete = ON`.execute(db);
    try {
      await update();
    } finally {
      await sql`PRAGMA secure_delete = OFF`.execute(db);
    }
    // Best effort: a reader elsewhere (the CLI, another process) can keep the WAL from emptying.
    await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
    return;
  }
  await update();
  await sql`vacuum full signing_keys, server_secrets`.execute(db);
}
