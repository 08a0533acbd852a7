import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { isForbiddenAddress } from '../../src/domain/address-policy.ts';
import { signedHeaders } from '../../src/delivery/senders.ts';
import { TargetGuard } from '../../src/delivery/target-guard.ts';

/** The worked example of docs/api.md §12, "Verifying a webhook": the same values, the same signature. */
describe('webhook signatures (docs/api.md §12)', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const at = new Date(1763895600 * 1000);
  const body =
    '{"type":"number.first_seen","timestamp":"2025-11-23T11:00:00.000Z","data":{"phone_number":"+441234567890","first_seen":"2025-11-23T10:59:58.123456789Z"}}';
  const expected = 'v1,I4IoNX+T5hKM4YlCXFg59/jEzpC/WzXm+gDevnkwSME=';

  it('signs the documented example exactly', () => {
    expect(signedHeaders([secret], id, at, body)).toEqual({ 'webhook-id': id, 'webhook-timestamp': '1763895600', 'webhook-signature': expected });
  });

  it('is HMAC-SHA256 over id.timestamp.body keyed by the base64 bytes after whsec_, as the doc tells a receiver to compute it', () => {
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    expect(`v1,${createHmac('sha256', key).update(`${id}.1763895600.${body}`).digest('base64')}`).toBe(expected);
  });

  it('verifies with the reference library, and fails for another secret', () => {
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': '' };
    headers['webhook-signature'] = signedHeaders([secret], id, new Date(Number(headers['webhook-timestamp']) * 1000), body)['webhook-signature']!;
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ type: 'number.first_seen' });
    expect(() => new Webhook('whsec_' + Buffer.alloc(24, 1).toString('base64')).verify(body, headers)).toThrow();
  });
});

describe('delivery targets (docs/api.md §12, server-side request forgery)', () => {
  it.each([
    '127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255',
    '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a9fe:a9fe', '2002:7f00:1::', 'not an address',
    // IPv4-compatible (::/96), which ipaddr.js calls unicast: loopback, cloud metadata, and even a public address inside.
    '::127.0.0.1', '::7f00:1', '::a9fe:a9fe', '::8.8.8.8', '0:0:0:0:0:0:a9fe:a9fe',
  ])('forbids %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows public %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it('checks every address a name resolves to, and pins the connection to them', async () => {
    const guard = new TargetGuard(false);
    await expect(guard.resolve(new URL('https://localhost/x'))).rejects.toThrow(/must not resolve to/);
    await expect(guard.resolve(new URL('http://93.184.215.14/x'))).rejects.toThrow(/https:/);
    const pinned = await guard.resolve(new URL('https://93.184.215.14/x'));
    expect(pinned.addresses).toEqual([{ address: '93.184.215.14', family: 4 }]);
    // The operator's switch lets local receivers through, plain http: included.
    expect((await new TargetGuard(true).resolve(new URL('http://localhost/x'))).addresses.length).toBeGreaterThan(0);
  });
});
