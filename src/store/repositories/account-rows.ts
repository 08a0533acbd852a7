import { sql } from 'kysely';

/**
 * Which rows of a table are an account's, as SQL conditions over the account id: one reading
 * shared by its export (account-export-reads.ts) and its erasure (account-erasure.ts), so what
 * leaves with an owner and what is erased on closing name the same rows.
 */
export const ofAccount = (column: string) => (id: string) => sql`${sql.ref(column)} = ${id}`;

/** Rows of the account's users. */
export const ofUsers = (id: string) => sql`user_id in (select user_id from users where account_id = ${id})`;

/** Rows of the account's alert integrations. */
export const ofIntegrations = (id: string) => sql`integration_id in (select id from integrations where account_id = ${id})`;
