/** A run of consecutive items, serialised, with the index of its first item in the input. */
export interface Batch {
  /** Index in the whole input of the batch's first item. */
  start: number;
  /** The items' JSON texts, in order. */
  json: string[];
}

const utf8 = new TextEncoder();

/**
 * Splits items into consecutive batches of at most `maxItems` whose JSON array stays within
 * `maxBytes` of UTF-8, the bounds the server sets on one request (docs/api.md §5, §7). An item
 * too large on its own goes alone, for the server to refuse with its own problem.
 */
export function splitIntoBatches(items: readonly unknown[], maxItems: number, maxBytes: number): Batch[] {
  const batches: Batch[] = [];
  let current: Batch | undefined;
  let bytes = 0;
  items.forEach((item, index) => {
    const json = JSON.stringify(item) ?? 'null';
    const size = utf8.encode(json).length + 1; // its comma or closing bracket
    if (!current || current.json.length >= maxItems || bytes + size > maxBytes) {
      current = { start: index, json: [] };
      batches.push(current);
      bytes = 1; // the opening bracket
    }
    current.json.push(json);
    bytes += size;
  });
  return batches;
}
