import type { Kysely, Selectable } from 'kysely';
import type { Session, SessionsRepository } from '../../domain/accounts/sessions.ts';
import { USER_ROLES, type Invitation, type InvitationPurpose, type User, type UserRole, type UsersRepository } from '../../domain/accounts/users.ts';
import type { Schema, UsersTable } from '../schema.ts';

/** Dashboard users, their one-time links and their sessions in the SQL store (migration 011). */
export class SqlUsersRepository implements UsersRepository, SessionsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async insertUser(user: User): Promise<void> {
    await this.db.insertInto('users').values({ ...user, disabled: user.disabled ? 1 : 0 }).execute();
  }

  async findUser(userId: string): Promise<User | undefined> {
    const row = await this.db.selectFrom('users').selectAll().where('user_id', '=', userId).executeTakeFirst();
    return row && toUser(row);
  }

  async findUserByEmail(email: string): Promise<User | undefined> {
    const row = await this.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
    return row && toUser(row);
  }

  async listUsers(accountId: string | null): Promise<User[]> {
    let query = this.db.selectFrom('users').selectAll().orderBy('created_at').orderBy('user_id');
    query = accountId === null ? query.where('account_id', 'is', null) : query.where('account_id', '=', accountId);
    return (await query.execute()).map(toUser);
  }

  async setDisabled(userId: string, disabled: boolean): Promise<boolean> {
    const result = await this.db.updateTable('users').set({ disabled: disabled ? 1 : 0 }).where('user_id', '=', userId).executeTakeFirst();
    if (result.numUpdatedRows > 0n) return true;
    const standIn = await this.db.updateTable('invitation_stand_ins').set({ disabled: disabled ? 1 : 0 }).where('user_id', '=', userId).executeTakeFirst();
    return standIn.numUpdatedRows > 0n;
  }

  async setRole(userId: string, role: UserRole): Promise<boolean> {
    const result = await this.db.updateTable('users').set({ role }).where('user_id', '=', userId).executeTakeFirst();
    if (result.numUpdatedRows > 0n) return true;
    const standIn = await this.db.updateTable('invitation_stand_ins').set({ role }).where('user_id', '=', userId).executeTakeFirst();
    return standIn.numUpdatedRows > 0n;
  }

  async insertStandIn(standIn: User & { account_id: string }): Promise<void> {
    await this.db
      .insertInto('invitation_stand_ins')
      .values({ user_id: standIn.user_id, account_id: standIn.account_id, email: standIn.email, role: standIn.role, disabled: standIn.disabled ? 1 : 0, created_at: standIn.created_at })
      .execute();
  }

  async findStandIn(userId: string): Promise<User | undefined> {
    const row = await this.db.selectFrom('invitation_stand_ins').selectAll().where('user_id', '=', userId).executeTakeFirst();
    return row && toUser({ ...row, password_hash: null });
  }

  async listStandIns(accountId: string): Promise<User[]> {
    const rows = await this.db.selectFrom('invitation_stand_ins').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('user_id').execute();
    return rows.map((row) => toUser({ ...row, password_hash: null }));
  }

  async setPasswordHash(userId: string, hash: string): Promise<void> {
    await this.db.updateTable('users').set({ password_hash: hash }).where('user_id', '=', userId).execute();
  }

  async insertInvitation(invitation: Invitation): Promise<void> {
    await this.db.insertInto('user_invitations').values(invitation).execute();
  }

  async findInvitation(tokenHash: string): Promise<Invitation | undefined> {
    const row = await this.db.selectFrom('user_invitations').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    return row && { ...row, purpose: row.purpose as InvitationPurpose };
  }

  async useInvitation(tokenHash: string, at: string): Promise<boolean> {
    // One statement: of two requests using the same link at once, exactly one updates the row.
    const result = await this.db
      .updateTable('user_invitations')
      .set({ used_at: at })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async retireInvitations(userId: string, at: string): Promise<void> {
    await this.db.updateTable('user_invitations').set({ used_at: at }).where('user_id', '=', userId).where('used_at', 'is', null).execute();
  }

  async insertSession(session: Session): Promise<void> {
    await this.db.insertInto('user_sessions').values(session).execute();
  }

  async findSession(idHash: string): Promise<{ session: Session; user: User } | undefined> {
    const row = await this.db
      .selectFrom('user_sessions')
      .innerJoin('users', 'users.user_id', 'user_sessions.user_id')
      .select([
        'user_sessions.id_hash',
        'user_sessions.created_at as session_created_at',
        'user_sessions.last_seen_at',
        'user_sessions.expires_at',
        'users.user_id',
        'users.account_id',
        'users.email',
        'users.role',
        'users.password_hash',
        'users.disabled',
        'users.created_at',
      ])
      .where('user_sessions.id_hash', '=', idHash)
      .executeTakeFirst();
    if (!row) return undefined;
    const { id_hash, session_created_at, last_seen_at, expires_at, ...user } = row;
    return { session: { id_hash, user_id: user.user_id, created_at: session_created_at, last_seen_at, expires_at }, user: toUser(user) };
  }

  async touchSession(idHash: string, at: string): Promise<void> {
    await this.db.updateTable('user_sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.db.deleteFrom('user_sessions').where('id_hash', '=', idHash).execute();
  }

  async deleteEndedSessionsOf(userId: string, now: string, idleBefore: string): Promise<void> {
    await this.db
      .deleteFrom('user_sessions')
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)]))
      .execute();
  }

  async holdView(idHash: string, sealed: string, at: string): Promise<void> {
    await this.db.updateTable('user_sessions').set({ held_view: sealed, held_at: at }).where('id_hash', '=', idHash).execute();
  }

  async takeView(idHash: string): Promise<{ sealed: string; at: string } | undefined> {
    const row = await this.db.selectFrom('user_sessions').select(['held_view', 'held_at']).where('id_hash', '=', idHash).executeTakeFirst();
    if (!row?.held_view || !row.held_at) return undefined;
    // Cleared only if still the one read: of two requests racing for it, one gets it.
    const taken = await this.db
      .updateTable('user_sessions')
      .set({ held_view: null, held_at: null })
      .where('id_hash', '=', idHash)
      .where('held_view', '=', row.held_view)
      .executeTakeFirst();
    return taken.numUpdatedRows > 0n ? { sealed: row.held_view, at: row.held_at } : undefined;
  }

  async deleteSessionsOf(userId: string): Promise<void> {
    await this.db.deleteFrom('user_sessions').where('user_id', '=', userId).execute();
  }
}

function toUser(row: Selectable<UsersTable>): User {
  const role = (USER_ROLES as readonly string[]).includes(row.role) ? (row.role as UserRole) : 'member';
  return { ...row, role, disabled: row.disabled === 1 };
}
