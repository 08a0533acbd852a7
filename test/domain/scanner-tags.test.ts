import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCANNER_TAGS, tagsOfUserAgent, tagsOfUserAgents, toolNames } from '../../src/domain/intelligence/scanner-tags.ts';

/** A User-Agent each tool has been seen sending, for each tag of the table (docs/scoring.md, "Tags"). */
const SEEN: Record<string, string[]> = {
  sipvicious: ['friendly-scanner', 'sipvicious', 'SIPVicious PRO 1.0'],
  sipsak: ['sipsak 0.9.8.1'],
  sipcli: ['sipcli/v1.8'],
  sipscan: ['SIPScan', 'sip-scan', 'sip-scanner/2.1'],
  smap: ['smap 0.6.0'],
  iwar: ['iWar'],
  sundayddr: ['sundayddr'],
  pplsip: ['pplsip'],
  vaxsip: ['VaxSIPUserAgent/3.1'],
  nmap: ['Nmap NSE'],
  sipp: ['SIPp/3.7.1', 'sipp'],
};

describe('scanner tags (docs/scoring.md, "Tags")', () => {
  for (const { tag } of SCANNER_TAGS) {
    it(`tags what ${tag} sends as ${tag}, and only that`, () => {
      expect(SEEN[tag], `no sample User-Agent for ${tag}`).toBeDefined();
      for (const agent of SEEN[tag]!) expect(tagsOfUserAgent(agent), agent).toEqual([tag]);
    });
  }

  it('has a sample for every tag and no sample for a tag the table lacks', () => {
    expect(Object.keys(SEEN).sort()).toEqual(SCANNER_TAGS.map((t) => t.tag).sort());
  });

  it('tags no ordinary softphone, PBX or absent value', () => {
    for (const agent of ['Asterisk PBX 18.20.0', 'FreeSWITCH-mod_sofia/1.10.9', 'Zoiper v2.10.19.6', 'Linphone/5.2.0', 'MicroSIP/3.21.3', 'PolycomVVX-VVX_410-UA/6.4.2', 'NOT_FOUND', '', 'Bitmap sender', 'gossipper']) {
      expect(tagsOfUserAgent(agent), agent).toEqual([]);
    }
  });

  it('gives an address’s agents their tags once each, in the table’s order', () => {
    expect(tagsOfUserAgents([{ user_agent: 'sipsak 0.9' }, { user_agent: 'friendly-scanner' }, { user_agent: 'sipvicious' }, { user_agent: 'Zoiper' }])).toEqual(['sipvicious', 'sipsak']);
    expect(tagsOfUserAgents([])).toEqual([]);
    expect(toolNames(['sipvicious', 'sipsak'])).toBe('SIPVicious, sipsak');
  });

  it('is the table docs/scoring.md shows, row for row', () => {
    const doc = readFileSync(new URL('../../docs/scoring.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z]+)` \| ([^|]+) \| ([a-z-]+) \| `((?:[^`])+)` \|/gm)].map((m) => [m[1], m[2]!.trim(), m[3], m[4]!.replace(/\\\|/g, '|')]);
    expect(rows).toEqual(SCANNER_TAGS.map((t) => [t.tag, t.name, t.family, t.pattern.source]));
  });
});
