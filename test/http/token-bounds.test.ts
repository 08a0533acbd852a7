import type { CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ISSUED_AT_SKEW_SECONDS, MAX_TOKEN_LIFETIME_SECONDS } from '../../src/oauth/token-lifetime.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signToken } from '../support/tokens.ts';
import { eventually } from '../support/eventually.ts';

/**
 * Tokens signed with the server's real key (as a leaked key would sign them) that claim more
 * than the service ever issues: refused by their times alone (docs/api.md §3).
 */
describe('bounds on a token’s times, whatever key signed it (docs/api.md §3)', () => {
  let h: Harness;
  let who: TestAccount;
  let key: { kid: string; privateKey: CryptoKey };

  beforeAll(async () => {
    // Its own server: the refusals below count as failed authentications from this address.
    h = await startHarness();
    who = await h.account();
    key = h.services.signingKeys.current();
  });
  afterAll(() => h?.close());

  const now = () => Math.floor(Date.now() / 1000);
  const sign = (issuedAt: number, expiresAt: number, jti: string) =>
    signToken(who, { kid: key.kid, key: key.privateKey, scope: 'read:phone-numbers', issuedAt, expiresAt, jti });
  const statusWith = async (token: string) =>
    (await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('accepts the longest lifetime the configuration allows, refuses a second more and a century', async () => {
    const t = now();
    expect(await statusWith(await sign(t, t + MAX_TOKEN_LIFETIME_SECONDS, 'longest'))).toBe(404);
    expect(await statusWith(await sign(t, t + MAX_TOKEN_LIFETIME_SECONDS + 1, 'too-long'))).toBe(401);
    expect(await statusWith(await sign(t, t + 100 * 365 * 86_400, 'century'))).toBe(401);
    // Back-dated to look short-lived from now on: the claimed lifetime still counts.
    expect(await statusWith(await sign(t - 40 * 86_400, t + 3600, 'backdated'))).toBe(401);
  });

  it('accepts an issue time within a minute ahead (clock skew), refuses one further ahead', async () => {
    const t = now();
    expect(await statusWith(await sign(t + 30, t + 3600, 'skewed'))).toBe(404);
    expect(await statusWith(await sign(t + MAX_ISSUED_AT_SKEW_SECONDS + 5, t + 3600, 'ahead'))).toBe(401);
    expect(await statusWith(await sign(t + 86_400, t + 2 * 86_400, 'tomorrow'))).toBe(401);
  });

  it('records the refusal with the client and account the verified token named', async () => {
    const t = now();
    expect(await statusWith(await sign(t + 3600, t + 7200, 'audited'))).toBe(401);
    const [entry] = await eventually('the refusal audited', () => h.services.audit.list({ accountId: who.account.account_id, limit: 1 }), (rows) => rows[0]?.action === 'api.auth_failed');
    expect(entry).toMatchObject({ action: 'api.auth_failed', client_id: who.clientId, detail: { reason: 'iat in the future' } });
  });

  it('issues tokens inside these bounds at the longest configurable TTL', async () => {
    const longest = await startHarness({ DATABASE_URL: h.config.databaseUrl, TOLLWATCH_TOKEN_TTL: String(MAX_TOKEN_LIFETIME_SECONDS) });
    try {
      const token = await who.token();
      const res = await fetch(`${longest.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: who.clientId, client_secret: who.clientSecret, grant_type: 'client_credentials' }),
      });
      const issued = ((await res.json()) as { access_token: string; expires_in: number });
      expect(issued.expires_in).toBe(MAX_TOKEN_LIFETIME_SECONDS);
      expect(await statusWith(issued.access_token)).toBe(404);
      expect(await statusWith(token)).toBe(404);
    } finally {
      await longest.app.close();
      await longest.services.close();
    }
  });
});
