import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EventCursors } from '../../src/domain/events/event-cursor.ts';

const KEY = randomBytes(32);
const POSITION = { eventTime: '2026-11-20T10:24:00.000000024Z', id: 123_456 };

describe('EventCursors', () => {
  const cursors = new EventCursors(KEY);

  it('gives back the position it sealed, for the same account', () => {
    const cursor = cursors.seal('acct-a', POSITION);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor.length).toBeLessThanOrEqual(120);
    expect(cursors.open('acct-a', cursor)).toEqual(POSITION);
    // Another instance with the same key reads it too.
    expect(new EventCursors(Buffer.from(KEY)).open('acct-a', cursor)).toEqual(POSITION);
  });

  it('shows nothing of the position, and never the same cursor twice', () => {
    const cursor = cursors.seal('acct-a', POSITION);
    const bytes = Buffer.from(cursor, 'base64url').toString('latin1');
    expect(bytes).not.toContain('2026');
    expect(bytes).not.toContain('123456');
    expect(cursors.seal('acct-a', POSITION)).not.toBe(cursor);
  });

  it('refuses a cursor sealed for another account', () => {
    expect(cursors.open('acct-b', cursors.seal('acct-a', POSITION))).toBeUndefined();
    // The account id is bound whole, not as a prefix.
    expect(cursors.open('acct-a', cursors.seal('acct-ab', POSITION))).toBeUndefined();
  });

  it('refuses a cursor altered anywhere, or sealed under another key', () => {
    const bytes = Buffer.from(cursors.seal('acct-a', POSITION), 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      const altered = Buffer.from(bytes);
      altered[i]! ^= 0x01;
      expect(cursors.open('acct-a', altered.toString('base64url')), `byte ${i}`).toBeUndefined();
    }
    expect(cursors.open('acct-a', bytes.subarray(0, -1).toString('base64url'))).toBeUndefined();
    expect(new EventCursors(randomBytes(32)).open('acct-a', bytes.toString('base64url'))).toBeUndefined();
  });

  it('refuses what it never made: the old plain form, garbage, oversize', () => {
    const plain = Buffer.from(JSON.stringify([POSITION.eventTime, POSITION.id])).toString('base64url');
    for (const cursor of [plain, '', 'garbage', '!!!!', `${cursors.seal('acct-a', POSITION)}=`, 'A'.repeat(10_000), Buffer.alloc(40).toString('base64url')]) {
      expect(cursors.open('acct-a', cursor), cursor.slice(0, 40)).toBeUndefined();
    }
  });

  it('needs a 32-byte key', () => {
    expect(() => new EventCursors(randomBytes(16))).toThrow(/32 bytes/);
  });
});
