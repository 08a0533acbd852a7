import type { FastifyRequest } from 'fastify';

/** One text field of a posted form; empty when absent or repeated, so a handler never meets an array. */
export function formText(request: FastifyRequest, name: string): string {
  const value = (request.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** Every value of a field that may repeat (checkboxes). */
export function formList(request: FastifyRequest, name: string): string[] {
  const value = (request.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
