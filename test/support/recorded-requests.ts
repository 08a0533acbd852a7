import { readFileSync } from 'node:fs';

/** One HTTP request as recorded from the SentryPeer node, with what the stand-in answered. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Array<[string, string]>;
  body: string;
  recordedStatus: number;
}

const FIXTURES = new URL('../fixtures/', import.meta.url);

/** The requests in `sentrypeer-node-http.txt`, verbatim. */
export function recordedRequests(): RecordedRequest[] {
  const text = readFileSync(new URL('sentrypeer-node-http.txt', FIXTURES), 'utf8');
  const blocks = text.split(/^### /m).filter((b) => b.trim().length > 0);
  return blocks.map((block) => {
    const [meta, ...rest] = block.split('\n');
    const status = /answered (\d{3})/.exec(meta ?? '');
    const raw = rest.join('\n');
    const split = raw.indexOf('\n\n');
    const head = raw.slice(0, split).split('\n');
    const [method, path] = (head[0] ?? '').split(' ');
    const headers = head.slice(1).map((line): [string, string] => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon), line.slice(colon + 1).trim()];
    });
    const length = Number(headers.find(([k]) => k.toLowerCase() === 'content-length')?.[1] ?? 0);
    const body = raw.slice(split + 2, split + 2 + length);
    return { method: method!, path: path!, headers, body, recordedStatus: Number(status?.[1]) };
  });
}

/** The node's JSON log: one 13-field event per line, exactly what it posts. */
export function recordedEvents(): string[] {
  return readFileSync(new URL('sentrypeer_json.log', FIXTURES), 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0);
}
