import { describe, expect, it } from 'vitest';
import { SHARED_PART, type IpAddressAnswer, type PhoneNumberAnswer } from '../../src/domain/lookups/lookup-answers.ts';
import { answerJson } from '../../src/http/api/lookup-serialiser.ts';

describe('answerJson: a lookup answer as JSON, its shared part serialized once per kept aggregate', () => {
  const number = {
    found: true as const,
    seen_count: 3,
    first_seen: '2026-11-01T10:00:00Z',
    last_seen: '2026-11-02T10:00:00Z',
    score: 41,
    reasons: ['called from 2 distinct source addresses', 'a "quoted" \u2028 reason'],
    source_ip_count: 2,
    sip_methods: { INVITE: 3 },
    matched_forms: ['+46812118532', '0046812118532'],
    e164: '+46812118532',
    country: 'SE',
    number_type: null,
    message: 'Attackers have tried to call this number 3 times.',
  };
  const address = {
    found: true as const,
    seen_count: 1,
    first_seen: '2026-11-01T10:00:00Z',
    last_seen: '2026-11-01T10:00:00Z',
    score: 4,
    reasons: [],
    called_number_count: 1,
    user_agents: [{ user_agent: 'friendly-scanner', count: 1 }],
    tags: ['sipvicious'],
    transports: { UDP: 1 },
    message: 'This address has sent 1 probe.',
  };

  it('is exactly JSON.stringify of the answer, found or not, numbers and addresses, however the value is written', () => {
    const answers: Array<PhoneNumberAnswer | IpAddressAnswer> = [
      { phone_number: '+46812118532', ...number, [SHARED_PART]: number },
      { phone_number: 'tel:+46 8 "121" 185 32\u2028', ...number, [SHARED_PART]: number },
      { ip_address: '2001:db8::7', ...address, [SHARED_PART]: address },
      { phone_number: '+15550000000', found: false, message: 'No probes to this number have been seen.' },
      { ip_address: '198.51.100.1', found: false, message: 'No probes from this address have been seen.' },
      // A found answer from elsewhere, without its shared part named: serialized whole.
      { phone_number: '+46812118532', ...number },
    ];
    for (const answer of answers) expect(answerJson(answer)).toBe(JSON.stringify(answer));
  });

  it('serializes the shared part by its identity: a new part for a new aggregate is serialized anew', () => {
    const before = answerJson({ phone_number: '+46812118532', ...number, [SHARED_PART]: number });
    const refolded = { ...number, seen_count: 4 };
    const after = answerJson({ phone_number: '+46812118532', ...refolded, [SHARED_PART]: refolded });
    expect(JSON.parse(before)).toMatchObject({ seen_count: 3 });
    expect(JSON.parse(after)).toMatchObject({ seen_count: 4 });
  });
});
