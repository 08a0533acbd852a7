/**
 * The allowance left, from the `RateLimit` and `RateLimit-Policy` fields of
 * draft-ietf-httpapi-ratelimit-headers-10 (docs/api.md §9), e.g.
 * `RateLimit: "lookups";r=3597;t=1184` and `RateLimit-Policy: "lookups";q=3600;w=3600`.
 */
export interface RateLimit {
  /** The policy's name: the route group, `lookups` or `submissions`. */
  policy: string;
  /** Units left in the current window. */
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  /** The policy's quota per window, when `RateLimit-Policy` names it. */
  quota?: number;
  /** The policy's window in seconds, when `RateLimit-Policy` names it. */
  windowSeconds?: number;
}

// One list member of a structured field (RFC 9651): a string or token, then ;key=integer params.
// Members of other shapes are skipped: the SDK reads only what this service sends.
const MEMBER = /^\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z*][\w:./*%!#$&'+^`|~-]*))((?:\s*;\s*[a-z*][a-z0-9_.*-]*(?:=[^;,]*)?)*)\s*$/;

/** Reads the two fields; undefined when the answer carried no `RateLimit`. */
export function readRateLimit(headers: Headers): RateLimit | undefined {
  const current = members(headers.get('ratelimit'))[0];
  if (!current || current.params.r === undefined || current.params.t === undefined) return undefined;
  const policy = members(headers.get('ratelimit-policy')).find((m) => m.name === current.name);
  const limit: RateLimit = { policy: current.name, remaining: current.params.r, resetSeconds: current.params.t };
  if (policy?.params.q !== undefined) limit.quota = policy.params.q;
  if (policy?.params.w !== undefined) limit.windowSeconds = policy.params.w;
  return limit;
}

function members(field: string | null): Array<{ name: string; params: Record<string, number | undefined> }> {
  if (!field) return [];
  // A comma inside a quoted name would split wrongly; policy names here are plain words.
  return field.split(',').flatMap((text) => {
    const m = MEMBER.exec(text);
    if (!m) return [];
    const params: Record<string, number | undefined> = {};
    for (const param of (m[3] ?? '').split(';').slice(1)) {
      const [key, value] = param.trim().split('=');
      if (key && value !== undefined && /^-?\d+$/.test(value.trim())) params[key] = Number(value.trim());
    }
    return [{ name: (m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1'), params }];
  });
}
