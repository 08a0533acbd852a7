/**
 * Bounds every verified access token must keep, whatever key signed it: they limit what a token
 * minted with a leaked key could claim (a lifetime of a century, an issue time in the future)
 * to what this service could have issued itself.
 */

/**
 * The longest lifetime (`exp − iat`) a token may claim: the most `TOLLWATCH_TOKEN_TTL` allows
 * (31 days). Not the configured TTL, so that lowering or raising it, or instances configured
 * differently during a rolling restart, never refuse a token one of them genuinely issued.
 */
export const MAX_TOKEN_LIFETIME_SECONDS = 31 * 86_400;

/**
 * How far in the future `iat` may lie: clocks of instances behind one load balancer disagree
 * by milliseconds under NTP; a minute is generous for that and refuses pre-dated tokens.
 */
export const MAX_ISSUED_AT_SKEW_SECONDS = 60;
