import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalUuid } from '../../src/domain/uuid.ts';

describe('canonicalUuid', () => {
  it.each([
    ['891DA16A-56B1-497F-ABEF-CA3A2A849BEA', '891da16a-56b1-497f-abef-ca3a2a849bea'],
    ['891dA16a-56B1-497f-AbEf-cA3a2A849bEa', '891da16a-56b1-497f-abef-ca3a2a849bea'],
    // Nil and max UUIDs, v1, v7, and a non-RFC variant: the contract takes any version.
    ['00000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000000'],
    ['FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', 'ffffffff-ffff-ffff-ffff-ffffffffffff'],
    ['6ba7b810-9dad-11d1-80b4-00c04fd430c8', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'],
    ['01890a5d-ac96-774b-bcce-b302099a8057', '01890a5d-ac96-774b-bcce-b302099a8057'],
    ['6ba7b810-9dad-01d1-f0b4-00c04fd430c8', '6ba7b810-9dad-01d1-f0b4-00c04fd430c8'],
    // The fixtures' node id.
    ['1aa3d549-39ac-4457-92fc-1a7bb4044eea', '1aa3d549-39ac-4457-92fc-1a7bb4044eea'],
  ])('%s → %s', (input, canonical) => {
    expect(canonicalUuid(input)).toBe(canonical);
  });

  it.each([
    '',
    'not-a-uuid',
    '891da16a56b1497fabefca3a2a849bea',
    '{891da16a-56b1-497f-abef-ca3a2a849bea}',
    'urn:uuid:891da16a-56b1-497f-abef-ca3a2a849bea',
    '891da16a-56b1-497f-abef-ca3a2a849be',
    '891da16a-56b1-497f-abef-ca3a2a849beaa',
    '891da16a-56b1-497f-abef-ca3a2a849beg',
    '891da16a-56b1-497f-abefca3a2a849bea',
    '891da16a-56b1-497f-abef-ca3a-2a849bea',
    '891da16a_56b1_497f_abef_ca3a2a849bea',
    ' 891da16a-56b1-497f-abef-ca3a2a849bea',
    '891da16a-56b1-497f-abef-ca3a2a849bea\n',
    '８91da16a-56b1-497f-abef-ca3a2a849bea',
  ])('rejects %j', (input) => {
    expect(canonicalUuid(input)).toBeNull();
  });

  it('accepts every generated UUID, returning it lower-case', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.boolean(), (uuid, upper) => {
        expect(canonicalUuid(upper ? uuid.toUpperCase() : uuid)).toBe(uuid.toLowerCase());
      }),
    );
  });
});
