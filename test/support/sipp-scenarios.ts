import { readFileSync } from 'node:fs';
/**
 * SIPp scenarios for the call path (test/call-guard/, bench/suites/call-path.ts), written out by the
 * caller. SIPp's built-in scenarios ignore Record-Route, so the ACK and BYE of a call through a
 * proxy that records its route would miss the proxy: these follow the route set. Every one
 * times INVITE to final response (`start_rtd` / `rtd`), which `-trace_rtt` writes per call.
 */

const invite = (user: string) => `
  <send retrans="500" start_rtd="1">
    <![CDATA[
      INVITE sip:${user}@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:${user}@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: sip:sipp@[local_ip]:[local_port]
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
  <recv response="100" optional="true"/>`;

const inDialog = (method: string, cseq: number, user: string) => `
  <send${method === 'BYE' ? ' retrans="500"' : ''}>
    <![CDATA[
      ${method} [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:${user}@[remote_ip]:[remote_port]>[peer_tag_param]
      [routes]
      Call-ID: [call_id]
      CSeq: ${cseq} ${method}
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>`;

/**
 * The final response `code`, its Reason header matched against `reason` (failing the call if it
 * does not match), and its ACK, after which the scenario goes on at `next` if given.
 */
const refusal = (code: number, reason: string, user: string, next?: string) => `
  <recv response="${code}" rtd="1">
    <action>
      <ereg regexp="${escapeXml(reason)}" search_in="hdr" header="Reason:" check_it="true" assign_to="reason"/>
    </action>
  </recv>
  <send${next ? ` next="${next}"` : ''}>
    <![CDATA[
      ACK sip:${user}@[remote_ip]:[remote_port] SIP/2.0
      [last_Via:]
      From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      [last_To:]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>`;

/**
 * The number called is SIPp's `-s` value, or `[field0]` to take each call's number from an
 * injection file (call-path.ts, `numbers`).
 */
const SERVICE = '[service]';

/**
 * A call that completes: INVITE, 200, ACK, a 20 ms call, BYE, 200, with the route the proxy
 * recorded. (Sent back to back, the ACK and the BYE can pass each other in the proxy, whose
 * workers relay in parallel; the PBX takes either order.)
 */
export function completedCallScenario(user = SERVICE): string {
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="call">${invite(user)}
  <recv response="180" optional="true"/>
  <recv response="200" rtd="1" rrs="true"/>${inDialog('ACK', 1, user)}
  <pause milliseconds="20"/>${inDialog('BYE', 2, user)}
  <recv response="200" crlf="true"/>
</scenario>
`;
}

/**
 * A call refused with `code`, whose Reason header must match `reason` (a POSIX extended regular
 * expression over the header's value): anything else fails the call in SIPp's count.
 */
export function refusedCallScenario(code: number, reason: string, user = SERVICE): string {
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="refused">${invite(user)}${refusal(code, reason, user)}
  <Reference variables="reason"/>
</scenario>
`;
}

/**
 * A call the guard may refuse with `code` (its Reason matching `reason`, as above) or let through,
 * ending cleanly either way: answered, it is ACKed and hung up along the recorded route. For a
 * test that calls until a decision changes; the guard's log tells which way each call went. (A
 * refused-call scenario that is answered instead abandons the call at the PBX, whose soft exit
 * then waits for a BYE that never comes.)
 */
export function decidedCallScenario(code: number, reason: string, user = SERVICE): string {
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="decided">${invite(user)}
  <recv response="200" optional="true" rtd="1" rrs="true" next="answered"/>${refusal(code, reason, user, 'done')}
  <label id="answered"/>${inDialog('ACK', 1, user)}
  <pause milliseconds="20"/>${inDialog('BYE', 2, user)}
  <recv response="200" crlf="true"/>
  <label id="done"/>
  <Reference variables="reason"/>
</scenario>
`;
}

/**
 * The PBX behind the proxy, shipped beside the example configuration for operators to try the
 * guard with (integrations/kamailio/pbx.xml): answers at once, takes the ACK (if it comes before
 * the BYE) and the BYE; echoes Record-Route. It
 * does not ring first: a 180 and a 200 sent together reach the caller in either order (the
 * proxy's workers relay them in parallel), and SIPp, taking a late 180 for the one it allowed
 * before the 200, loses the call's route set: about one call in a hundred at 500 a second.
 */
export function answeringScenario(): string {
  return readFileSync(new URL('../../integrations/kamailio/pbx.xml', import.meta.url), 'utf8');
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
