import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { problem, sendProblem } from './problem.ts';

/**
 * The methods each path of a scope takes, learnt from its routes as they are registered, so
 * that a known path asked with another method is answered 405 with `Allow` (RFC 9110 §15.5.6)
 * rather than 404. A path value matches any segment, as it does in the router.
 */
export class AllowedMethods {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];

  /** Fastify's `onRoute` hook: records one route's method(s). */
  readonly record = (route: RouteOptions): void => {
    const pattern = patternOf(route.url);
    let entry = this.routes.find((r) => r.pattern.source === pattern.source);
    if (!entry) {
      entry = { pattern, methods: new Set() };
      this.routes.push(entry);
    }
    for (const method of [route.method].flat()) entry.methods.add(method.toUpperCase());
  };

  /**
   * Answers 405 `method_not_allowed` with `Allow` when the request's path is one a route takes
   * with other methods; undefined (nothing sent) when no route has the path.
   */
  refuseOtherMethod(request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const methods = this.at((request.raw.url ?? '').split('?')[0]!);
    if (methods.length === 0 || methods.includes(request.method)) return undefined;
    reply.header('allow', methods.join(', '));
    return sendProblem(reply, problem('method_not_allowed', `${request.method} is not taken here; this path takes ${methods.join(', ')}`));
  }

  /** The methods some route takes at this path (sorted), empty when no route has the path. */
  at(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    return [...methods].sort();
  }
}

function patternOf(url: string): RegExp {
  const segments = url.split('/').map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}$`);
}
