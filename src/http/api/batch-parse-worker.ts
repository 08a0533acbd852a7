import { parentPort } from 'node:worker_threads';
import { readJsonBatch, readNdjsonBatch } from './batch-text.ts';

/**
 * The parse thread of large batch bodies (batch-parser.ts): a 16 MiB body takes hundreds of
 * milliseconds to parse, which on the main thread would hold up every other request.
 */
export interface ParseRequest {
  id: number;
  text: string;
  ndjson: boolean;
  maxItems: number;
}

const port = parentPort!;
port.on('message', ({ id, text, ndjson, maxItems }: ParseRequest) => {
  port.postMessage({ id, result: ndjson ? readNdjsonBatch(text, maxItems) : readJsonBatch(text, maxItems) });
});
