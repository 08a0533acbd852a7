import { describe, expect, it } from 'vitest';
import { canonicalUuid } from '../../src/domain/uuid.ts';

describe('canonicalUuid', () => {
  it('accepts any version and case, returning lower case', () => {
    expect(canonicalUuid('891DA16A-56B1-497F-ABEF-CA3A2A849BEA')).toBe('891da16a-56b1-497f-abef-ca3a2a849bea');
    expect(canonicalUuid('00000000-0000-0000-0000-000000000000')).toBe('00000000-0000-0000-0000-000000000000');
    expect(canonicalUuid('01890a5d-ac96-774b-bcce-b302099a8057')).toBe('01890a5d-ac96-774b-bcce-b302099a8057');
    expect(canonicalUuid('6ba7b810-9dad-01d1-f0b4-00c04fd430c8')).toBe('6ba7b810-9dad-01d1-f0b4-00c04fd430c8');
  });

  it.each(['', 'not-a-uuid', '891da16a56b1497fabefca3a2a849bea', '{891da16a-56b1-497f-abef-ca3a2a849bea}', 'urn:uuid:891da16a-56b1-497f-abef-ca3a2a849bea', '891da16a-56b1-497f-abef-ca3a2a849be', '891da16a-56b1-497f-abef-ca3a2a849beg', ' 891da16a-56b1-497f-abef-ca3a2a849bea'])(
    'rejects %j',
    (input) => {
      expect(canonicalUuid(input)).toBeNull();
    },
  );
});
