import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * The whole policy of a JSON API (OWASP REST Security): load nothing, be framed by nothing.
 * Written out rather than built by helmet, whose directives start from defaults meant for
 * HTML pages (`script-src 'self'`, `upgrade-insecure-requests`, …) that say nothing here.
 */
const CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * The policy of the Swagger UI pages under `/docs`, from nothing allowed up: its scripts and
 * stylesheets from this origin only (no inline script, no eval: its bundle needs neither),
 * images from here or as data: URIs (its stylesheet's icons and its logo are data: URIs), the
 * OpenAPI document fetched from here and "Try it out" requests sent to the public URL, which
 * may be another origin than the one the page was read from. Never framed, no forms, no base.
 */
export function documentationContentSecurityPolicy(publicUrl: string): string {
  const directives = [
    "default-src 'none'",
    "base-uri 'none'",
    `connect-src 'self' ${new URL(publicUrl).origin}`,
    "form-action 'none'",
    "frame-ancestors 'none'",
    "img-src 'self' data:",
    "script-src 'self'",
    "style-src 'self'",
  ];
  return directives.join('; ');
}

/** Security headers for JSON answers and plain pages: nothing to render, frame or sniff. */
const OPTIONS = {
  contentSecurityPolicy: false,
  crossOriginEmbedderPolicy: false,
  // No page of ours is ever meant to be framed, not even by our own origin.
  xFrameOptions: { action: 'deny' },
  // HSTS belongs to whatever terminates TLS in front of us.
  strictTransportSecurity: false,
} as const;

/**
 * The headers helmet would set, worked out once. Helmet rebuilds them on every call, which
 * cost 8% of a lookup's time in profiles; for answers whose headers never vary, once is enough.
 */
export function securityHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader(name: string, value: string) {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  } as unknown as ServerResponse;
  helmet(OPTIONS)({} as IncomingMessage, response, () => {});
  headers['content-security-policy'] = CONTENT_SECURITY_POLICY;
  return headers;
}
