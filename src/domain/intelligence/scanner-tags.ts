/**
 * What tool a probe's User-Agent says sent it (docs/scoring.md, "Tags"): the scanners and
 * attack tools that SIP honeypots see, each with the family it belongs to, matched on the
 * User-Agent as sent. A tag names what the header claims, which an attacker may forge; it
 * tells defenders which playbook a source follows (SIPVicious sweeps, sipsak pings, a
 * PBX-cracking kit's registrations), not who sent it. An agent that matches no row gets no tag:
 * most softphones and PBXs are legitimate software, also used by fraudsters.
 */
export interface ScannerTag {
  /** The tag as the API writes it: lower case, stable. */
  tag: string;
  /** The tool's own name, for people. */
  name: string;
  /** What kind of tool it is. */
  family: 'sip-scanner' | 'sip-cracker' | 'network-scanner' | 'sip-test-tool' | 'malware';
  /** Matched anywhere in the User-Agent, case-insensitively. */
  pattern: RegExp;
  /** What the tool does, and how it is known to present itself. */
  about: string;
}

/** The table docs/scoring.md shows, in the order tags are listed in an answer. */
export const SCANNER_TAGS: readonly ScannerTag[] = [
  {
    tag: 'sipvicious',
    name: 'SIPVicious',
    family: 'sip-scanner',
    pattern: /friendly-scanner|sipvicious/i,
    about: 'svmap, svwar and svcrack: sweeps for SIP servers, enumerates extensions, cracks their passwords. Its default User-Agent is "friendly-scanner"; SIPVicious PRO names itself',
  },
  { tag: 'sipsak', name: 'sipsak', family: 'sip-test-tool', pattern: /\bsipsak\b/i, about: 'the SIP Swiss army knife: OPTIONS pings and test messages' },
  { tag: 'sipcli', name: 'sipcli', family: 'sip-scanner', pattern: /\bsipcli\b/i, about: 'a command-line SIP client used to place test calls through open servers' },
  { tag: 'sipscan', name: 'SIPScan', family: 'sip-scanner', pattern: /\bsip-?scan(ner)?\b/i, about: 'SIP sweepers that name themselves SIPScan, sipscan or sip-scanner' },
  { tag: 'smap', name: 'smap', family: 'sip-scanner', pattern: /\bsmap\b/i, about: 'a SIP "nmap": finds and fingerprints SIP devices' },
  { tag: 'iwar', name: 'iWar', family: 'sip-scanner', pattern: /\biwar\b/i, about: 'a war dialler that also sweeps SIP' },
  { tag: 'sundayddr', name: 'sundayddr', family: 'malware', pattern: /sundayddr/i, about: 'a SIP-scanning worm that registers and calls through what it finds' },
  { tag: 'pplsip', name: 'pplsip', family: 'sip-cracker', pattern: /\bpplsip\b/i, about: 'a scanning and registration-cracking tool seen in toll-fraud campaigns' },
  { tag: 'vaxsip', name: 'VaxSIPUserAgent', family: 'sip-cracker', pattern: /vaxsipuseragent/i, about: 'a SIP SDK whose default User-Agent brute-forcing kits keep' },
  { tag: 'nmap', name: 'Nmap', family: 'network-scanner', pattern: /\bnmap\b/i, about: 'the network scanner: its SIP scripts (sip-methods, sip-enum-users, sip-brute) send "Nmap NSE"' },
  { tag: 'sipp', name: 'SIPp', family: 'sip-test-tool', pattern: /\bsipp\b/i, about: 'the SIP traffic generator, run against servers it was not meant for' },
];

/**
 * Agents already matched: a feed of 100,000 addresses names each of a few hundred agents again
 * and again, and each would be run through every pattern. Bounded, since agents are attackers'
 * text: emptied when full.
 */
const known = new Map<string, readonly string[]>();
const KNOWN_AGENTS = 10_000;

/** The tags of one User-Agent, in the table's order; none for an agent no row matches. */
export function tagsOfUserAgent(userAgent: string): readonly string[] {
  let tags = known.get(userAgent);
  if (!tags) {
    if (known.size >= KNOWN_AGENTS) known.clear();
    tags = SCANNER_TAGS.filter((t) => t.pattern.test(userAgent)).map((t) => t.tag);
    known.set(userAgent, tags);
  }
  return tags;
}

/** The tags of a set of User-Agents (an address's most seen), each once, in the table's order. */
export function tagsOfUserAgents(userAgents: ReadonlyArray<{ user_agent: string }>): string[] {
  const found = new Set(userAgents.flatMap((u) => tagsOfUserAgent(u.user_agent)));
  return SCANNER_TAGS.filter((t) => found.has(t.tag)).map((t) => t.tag);
}

/** The tools' own names, for people: "SIPVicious, sipsak". */
export function toolNames(tags: readonly string[]): string {
  return tags.map((tag) => SCANNER_TAGS.find((t) => t.tag === tag)?.name ?? tag).join(', ');
}
