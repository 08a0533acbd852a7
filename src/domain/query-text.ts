/**
 * A query parameter's one value as text; undefined when absent, or when refused for its shape
 * (given more than once, or not a string), which `refuse` is told with the contract's message.
 */
export function queryText(input: Readonly<Record<string, unknown>>, name: string, refuse: (field: string, message: string) => void): string | undefined {
  const value = input[name];
  if (value === undefined || typeof value === 'string') return value;
  refuse(name, Array.isArray(value) ? 'must be given once' : 'must be a string');
  return undefined;
}
