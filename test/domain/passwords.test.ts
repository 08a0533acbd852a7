import { describe, expect, it } from 'vitest';
import { checkPasswordRules, hashPassword, needsRehash, passwordMatches, SCRYPT_PARAMETERS } from '../../src/domain/accounts/passwords.ts';

describe('dashboard passwords (docs/dashboard.md, "People")', () => {
  it('verifies the password it hashed, and nothing else', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await passwordMatches('correct horse battery staple', stored)).toBe(true);
    expect(await passwordMatches('correct horse battery stapl', stored)).toBe(false);
    expect(await passwordMatches('correct horse battery staple', 'not a hash')).toBe(false);
  });

  it('salts each hash, so equal passwords hash differently', async () => {
    expect(await hashPassword('the same password')).not.toBe(await hashPassword('the same password'));
  });

  it('keeps old parameters verifying, and says when a hash should be made again', async () => {
    const weak = await hashPassword('an older password', { N: 2 ** 10, r: 8, p: 1 });
    expect(await passwordMatches('an older password', weak)).toBe(true);
    expect(needsRehash(weak)).toBe(true);
    expect(needsRehash(await hashPassword('a current password', SCRYPT_PARAMETERS))).toBe(false);
  });

  it('refuses passwords too short to resist guessing', () => {
    expect(() => checkPasswordRules('short')).toThrow(/12 to 1024/);
    expect(() => checkPasswordRules('ééééééééééé')).toThrow();
    expect(() => checkPasswordRules('twelve chars')).not.toThrow();
    expect(() => checkPasswordRules(`twelve chars\u0000`)).toThrow();
  });
});
