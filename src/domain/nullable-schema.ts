import { Type } from 'typebox';

/**
 * A value of one of these JSON types or null, written as a `type` list (OpenAPI 3.1, JSON
 * Schema 2020-12) rather than an `anyOf`: the answer serializer (fast-json-stringify) writes a
 * type list straight, while an `anyOf` makes it run ajv on the value of every answer to choose
 * a branch.
 */
export function nullable<T>(types: readonly ('string' | 'integer' | 'number' | 'boolean')[], options: Record<string, unknown> = {}) {
  return Type.Unsafe<T | null>({ ...options, type: [...types, 'null'] });
}
