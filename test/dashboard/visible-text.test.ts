import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { visibleText } from '../../src/domain/visible-text.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, type WebClient } from './web-client.ts';

/** U+202E, right-to-left override: "resu-lanigiro" after it displays as "original-user". */
const RLO = '\u202e';
const SPOOFS = {
  sip_user_agent: `friendly${RLO}resu-lanigiro`,
  // A zero-width space inside a number, a soft hyphen and a BOM: each hides from the eye.
  called_number: '+4681\u200b2118532',
  sip_message: `OPTIONS sip:100@198.51.100.2 SIP/2.0\r\nUser-Agent: ${RLO}nimda\u2066x\u2069\u00ad\ufeff\u0007\r\n\r\n`,
};
const RAW = [RLO, '\u200b', '\u2066', '\u2069', '\u00ad', '\ufeff', '\u0007'];

/**
 * Text that cannot lie: bidirectional controls, zero-width and other
 * invisible format characters, and controls in what an attacker sent are shown as visible
 * escapes on every page, chart and title; the raw value stays in the event's JSON.
 */
describe('attacker text shown as it is (docs/dashboard.md, "Security")', () => {
  let h: Harness;
  let owner: TestAccount;
  let page: WebClient;
  let uuid: string;

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    ({ browser: page } = await signedIn(h, owner.account.account_id));
    const event = sampleEvent({ ...SPOOFS, event_timestamp: new Date().toISOString().replace('T', ' ').slice(0, 19) });
    uuid = event.event_uuid as string;
    expect((await postEvent(owner, event)).status).toBe(201);
  });
  afterAll(() => h?.close());

  it('escapes them the same way everywhere, as the CLI does', () => {
    expect(visibleText(SPOOFS.sip_user_agent)).toBe('friendly\\u202eresu-lanigiro');
    expect(visibleText(SPOOFS.called_number)).toBe('+4681\\u200b2118532');
    expect(visibleText('a\u0000b\u001bc\u009bd\u{e0041}e\u2028f')).toBe('a\\x00b\\x1bc\\x9bd\\u{e0041}e\\u2028f');
    // What shows as itself is left alone: letters of any script, emoji, a no-break space.
    expect(visibleText('Göteborg 电话 ☎️ \u00a0ok')).toBe('Göteborg 电话 ☎️ \u00a0ok');
    // Layout a page keeps, when asked.
    expect(visibleText('a\tb\r\nc\u202e', '\t\r\n')).toBe('a\tb\r\nc\\u202e');
  });

  it('shows the escapes in the events table, the event page (title and SIP message included) and the charts', async () => {
    for (const path of ['/events', `/events/${uuid}`, '/overview']) {
      const res = await page.get(path);
      expect(res.status, path).toBe(200);
      for (const c of RAW) expect(res.text.includes(c), `${path} holds U+${c.codePointAt(0)!.toString(16)}`).toBe(false);
    }
    const eventPage = (await page.get(`/events/${uuid}`)).text;
    expect(eventPage).toContain('friendly\\u202eresu-lanigiro');
    expect(eventPage).toContain('+4681\\u200b2118532');
    expect(eventPage).toContain('\\u202enimda\\u2066x\\u2069\\xad\\ufeff\\x07');
    expect((await page.get('/events')).text).toContain('friendly\\u202eresu-lanigiro');
    expect((await page.get('/overview')).text).toContain('friendly\\u202eresu-lanigiro');
  });

  it('keeps the raw value in the event’s JSON', async () => {
    const stored = (await (await owner.api(`/api/events/${uuid}`)).json()) as Record<string, string>;
    expect(stored.sip_user_agent).toBe(SPOOFS.sip_user_agent);
    expect(stored.sip_message).toBe(SPOOFS.sip_message);
  });
});
