import { describe, expect, it } from 'vitest';
import { isMailableAddress } from '../../src/domain/accounts/email-address.ts';

/** New users' addresses (src/domain/accounts/users.ts, validEmail): the form mail servers take from anyone. */
describe('isMailableAddress', () => {
  it.each([
    'mate@example.test',
    'first.last+tag@mail.example.com',
    "o'brien@example.ie",
    'x_y-z!#$%&*/=?^`{|}~@a-b.example',
    'a@xn--bcher-kva.example',
    `${'l'.repeat(64)}@example.test`,
  ])('takes %j', (address) => expect(isMailableAddress(address)).toBe(true));

  it.each([
    'a"><script>alert(9)</script>@a.test',
    '"quoted"@example.test',
    'a b@example.test',
    '.a@example.test',
    'a.@example.test',
    'a..b@example.test',
    'a@b',
    'a@-b.test',
    'a@b-.test',
    'a@b..test',
    'a@[127.0.0.1]',
    'a@127.0.0.1',
    'a@bü.test',
    'ü@example.test',
    '@example.test',
    'a@',
    'a@@example.test',
    'a@example.test\r\nRCPT TO:<b@example.test>',
    `${'l'.repeat(65)}@example.test`,
    `a@${'d'.repeat(64)}.test`,
  ])('refuses %j', (address) => expect(isMailableAddress(address)).toBe(false));
});
