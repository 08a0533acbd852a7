import { readFileSync } from 'node:fs';
import { zoneOrigin } from '../domain/dns/zone-names.ts';
import { GuardSettingError } from './kamailio-guard-config.ts';

/** The DNS mode's template, beside the HTTP guard's (docs/dns.md). */
export const DNS_GUARD_TEMPLATE = new URL('../../integrations/kamailio/tollwatch-guard-dns.cfg', import.meta.url);

/** What an operator chooses for the guard in DNS mode: the zones asked, and the decision. */
export interface DnsGuardSettings {
  numberZone: string;
  addressZone: string;
  threshold: number;
  refuseCode: 403 | 603;
  checkSource: boolean;
}

/**
 * The DNS guard's template with the operator's settings in its `#!substdef` lines. Zone names
 * are checked as DNS names (letters, digits, hyphens and dots), so nothing Kamailio's
 * substitution or strings would read can get in.
 */
export function renderDnsGuardConfig(settings: DnsGuardSettings, template = readFileSync(DNS_GUARD_TEMPLATE, 'utf8')): string {
  if (!Number.isInteger(settings.threshold) || settings.threshold < 0 || settings.threshold > 100) throw new GuardSettingError('the threshold must be an integer from 0 to 100');
  if (settings.refuseCode !== 403 && settings.refuseCode !== 603) throw new GuardSettingError('the refusal must be 403 or 603');
  const zone = (what: string, name: string) => {
    try {
      return zoneOrigin(name);
    } catch (err) {
      throw new GuardSettingError(`the ${what} zone: ${(err as Error).message}`);
    }
  };
  const values: Record<string, string> = {
    TW_NUMBER_ZONE: zone('number', settings.numberZone),
    TW_ADDRESS_ZONE: zone('address', settings.addressZone),
    TW_THRESHOLD: String(settings.threshold),
    TW_REFUSE_CODE: String(settings.refuseCode),
    TW_REFUSE_TEXT: settings.refuseCode === 403 ? 'Forbidden' : 'Decline',
  };
  let text = template;
  for (const [name, value] of Object.entries(values)) {
    const line = new RegExp(`^#!substdef "!${name}![^!\\n]*!"$`, 'm');
    if (!line.test(text)) throw new Error(`the DNS guard template has no setting ${name}`);
    text = text.replace(line, () => `#!substdef "!${name}!${value}!"`);
  }
  if (!settings.checkSource) text = text.replace(/^##!define TW_SKIP_SOURCE$/m, '#!define TW_SKIP_SOURCE');
  return text;
}
