import { readFileSync } from 'node:fs';

/** Where the guard's template lives: shipped in the repository beside its example configuration. */
export const GUARD_TEMPLATE = new URL('../../integrations/kamailio/tollwatch-guard.cfg', import.meta.url);

/** What an operator chooses for the Kamailio call guard (docs/call-guard.md, "Settings"). */
export interface GuardSettings {
  url: string;
  clientId: string;
  clientSecret: string;
  threshold: number;
  /**
   * A number never seen is refused when its range scores at least this (docs/call-guard.md,
   * "Ranges"); null: ranges decide nothing (the default).
   */
  rangeThreshold: number | null;
  refuseCode: 403 | 603;
  budgetMs: number;
  failClosed: boolean;
  failCode: number;
  /** Tollwatch answering 429 (the allowance spent): let the call through, refuse it, or (mirror mode) keep the mirror's decision. */
  quota: 'open' | 'closed' | 'mirror';
  checkSource: boolean;
  mirror: boolean;
  mirrorIntervalSeconds: number;
  mirrorPassesMisses: boolean;
  pollMicros: number;
}

export const GUARD_DEFAULTS: Omit<GuardSettings, 'url' | 'clientId' | 'clientSecret'> = {
  threshold: 50,
  rangeThreshold: null,
  refuseCode: 403,
  budgetMs: 100,
  failClosed: false,
  failCode: 503,
  quota: 'open',
  checkSource: true,
  mirror: false,
  mirrorIntervalSeconds: 60,
  mirrorPassesMisses: false,
  pollMicros: 500,
};

const REASON_PHRASES: Record<number, string> = {
  403: 'Forbidden',
  603: 'Decline',
  500: 'Server Internal Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Server Time-out',
};

/** A setting the template cannot carry; the message names it. */
export class GuardSettingError extends Error {}

/**
 * The guard's template with the operator's settings in place of its defaults. The settings are
 * written into Kamailio `#!substdef` lines, which substitute text everywhere after them,
 * strings included: so only characters that mean nothing there are accepted (no `!`, which
 * delimits the substitution, no `"` or `\`, no `$`, which starts a Kamailio variable).
 */
export function renderGuardConfig(settings: GuardSettings, template = readFileSync(GUARD_TEMPLATE, 'utf8')): string {
  const url = checkedUrl(settings.url);
  const values: Record<string, string> = {
    TW_URL: url,
    TW_CLIENT_ID: checkedCredential('client id', settings.clientId),
    TW_CLIENT_SECRET: checkedCredential('client secret', settings.clientSecret),
    TW_THRESHOLD: String(checkedInteger('threshold', settings.threshold, 0, 100)),
    // Off, the template's own value stays: nothing reads it without TW_RANGE.
    TW_RANGE_THRESHOLD: String(settings.rangeThreshold === null ? 100 : checkedInteger('range threshold', settings.rangeThreshold, 0, 100)),
    TW_REFUSE_CODE: String(settings.refuseCode),
    TW_REFUSE_TEXT: REASON_PHRASES[settings.refuseCode]!,
    TW_BUDGET_MS: String(checkedInteger('budget', settings.budgetMs, 10, 10_000)),
    TW_FAIL_CODE: String(checkedInteger('fail code', settings.failCode, 500, 599)),
    TW_FAIL_TEXT: REASON_PHRASES[settings.failCode] ?? 'Server Error',
    TW_MIRROR_INTERVAL: String(checkedInteger('mirror interval', settings.mirrorIntervalSeconds, 5, 86_400)),
    TW_POLL_US: String(checkedInteger('poll interval', settings.pollMicros, 100, 100_000)),
  };
  if (settings.refuseCode !== 403 && settings.refuseCode !== 603) throw new GuardSettingError('the refusal must be 403 or 603');
  if (settings.quota === 'mirror' && !settings.mirror) throw new GuardSettingError('--quota mirror needs mirror mode (--mode mirror)');
  const defines: Record<string, boolean> = {
    TW_FAIL_CLOSED: settings.failClosed,
    TW_QUOTA_CLOSED: settings.quota === 'closed',
    TW_QUOTA_MIRROR: settings.quota === 'mirror',
    TW_SKIP_SOURCE: !settings.checkSource,
    TW_RANGE: settings.rangeThreshold !== null,
    TW_MIRROR: settings.mirror,
    TW_MIRROR_PASS_MISSES: settings.mirror && settings.mirrorPassesMisses,
  };
  let text = template;
  for (const [name, value] of Object.entries(values)) {
    const line = new RegExp(`^#!substdef "!${name}![^!\\n]*!"$`, 'm');
    if (!line.test(text)) throw new Error(`the guard template has no setting ${name}`);
    text = text.replace(line, () => `#!substdef "!${name}!${value}!"`);
  }
  for (const [name, on] of Object.entries(defines)) {
    const line = new RegExp(`^#?#!define ${name}$`, 'm');
    if (!line.test(text)) throw new Error(`the guard template has no switch ${name}`);
    text = text.replace(line, on ? `#!define ${name}` : `##!define ${name}`);
  }
  return text;
}

function checkedUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new GuardSettingError(`the Tollwatch URL ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new GuardSettingError('the Tollwatch URL must be http or https');
  // A bare `?` or `#` leaves `search` and `hash` empty but stays in `href`, and the guard appends
  // its paths to `href`: `/?/oauth/token` would never reach the token endpoint.
  if (/[?#]/.test(url.href) || url.username || url.password) throw new GuardSettingError('the Tollwatch URL takes no query, fragment or credentials');
  const text = url.href.replace(/\/+$/, '');
  if (/[!"\\$\s]/.test(text)) throw new GuardSettingError('the Tollwatch URL holds a character Kamailio would read as syntax (! " \\ $ or a space)');
  return text;
}

function checkedCredential(what: string, value: string): string {
  if (!value) throw new GuardSettingError(`the ${what} is missing`);
  // Tollwatch issues ids and secrets in base64url with a prefix (twc_…, tws_…).
  if (!/^[A-Za-z0-9_.~-]{1,200}$/.test(value)) throw new GuardSettingError(`the ${what} is not one Tollwatch issues`);
  return value;
}

function checkedInteger(what: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new GuardSettingError(`the ${what} must be a whole number from ${min} to ${max}`);
  return value;
}
