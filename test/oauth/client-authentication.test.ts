import { describe, expect, it } from 'vitest';
import type { Account, Client } from '../../src/domain/accounts/accounts.ts';
import { hashSecret } from '../../src/domain/accounts/secrets.ts';
import { readBasicCredentials, verifyClientSecret } from '../../src/oauth/client-authentication.ts';

const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

describe('readBasicCredentials: one decoder for the token endpoint and /api', () => {
  it('reads id and secret, form-decoded as RFC 6749 §2.3.1 says', () => {
    expect(readBasicCredentials(basic('twc_abc-1:s3cr%2Bt'))).toEqual({ clientId: 'twc_abc-1', clientSecret: 's3cr+t' });
    expect(readBasicCredentials(`basic   ${Buffer.from('twc_a:b').toString('base64')}`)).toEqual({ clientId: 'twc_a', clientSecret: 'b' });
  });

  it('is no answer for other schemes or no header', () => {
    expect(readBasicCredentials(undefined)).toBeUndefined();
    expect(readBasicCredentials('Bearer abc')).toBeUndefined();
    expect(readBasicCredentials('Basicx abc')).toBeUndefined();
  });

  it('refuses what no client could have sent, with the stricter of the two old rules', () => {
    for (const text of ['no-colon', ':secret', 'twc_a:', 'twc_%zz:secret', 'twc_a:%zz', 'twc a:secret', 'twc_\u0000:secret', 'twc_a:se\u0000cret', `${'a'.repeat(257)}:s`, `twc_a:${'s'.repeat(257)}`]) {
      expect(readBasicCredentials(basic(text)), JSON.stringify(text)).toBe('unreadable');
    }
    expect(readBasicCredentials('Basic')).toBe('unreadable');
    expect(readBasicCredentials('Basic !!!notbase64')).toBe('unreadable');
  });
});

describe('verifyClientSecret: one verification', () => {
  const account: Account = { account_id: 'acc-1', name: 'A', plan: 'contributor', trusted: false, disabled: false, created_at: '' };
  const client: Client = {
    client_id: 'twc_a',
    account_id: 'acc-1',
    name: 'c',
    permissions: ['read:events'],
    secret_hash: hashSecret('right'),
    secret_version: 1,
    created_at: '',
  };

  it('accepts the right secret', () => {
    expect(verifyClientSecret({ client, account }, { clientId: 'twc_a', clientSecret: 'right' })).toEqual({ ok: true, client, account });
  });

  it('answers an unknown client and a wrong secret alike, naming only the id that was sent', () => {
    const unknown = verifyClientSecret(undefined, { clientId: 'twc_a', clientSecret: 'right' });
    const wrong = verifyClientSecret({ client, account }, { clientId: 'twc_a', clientSecret: 'wrong' });
    expect(unknown).toEqual({ ok: false, reason: 'invalid_client', subject: { clientId: 'twc_a' } });
    expect(wrong).toEqual(unknown);
  });

  it('refuses a disabled account only once the secret was right, naming the account', () => {
    const disabled = { ...account, disabled: true };
    expect(verifyClientSecret({ client, account: disabled }, { clientId: 'twc_a', clientSecret: 'right' })).toEqual({
      ok: false,
      reason: 'account disabled',
      subject: { clientId: 'twc_a', accountId: 'acc-1' },
    });
    expect(verifyClientSecret({ client, account: disabled }, { clientId: 'twc_a', clientSecret: 'wrong' })).toMatchObject({ reason: 'invalid_client' });
  });
});
