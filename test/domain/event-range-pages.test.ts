import { describe, expect, it } from 'vitest';
import { EventCursors } from '../../src/domain/events/event-cursor.ts';
import { EventQuery, RANGE_SCAN } from '../../src/domain/events/event-query.ts';
import type { EventFilter, EventPosition, EventsRepository, StoredEvent } from '../../src/domain/events/events.ts';

/** The events of one account, newest first, as a repository answers a keyset page. */
function repositoryOf(sources: string[]): EventsRepository & { reads: number } {
  const rows = sources.map((source_ip, i) => ({
    event: { source_ip, event_uuid: `e${i}`, event_time: `2026-11-21T10:00:00.${String(999_999_999 - i).padStart(9, '0')}Z` } as unknown as StoredEvent,
    position: { eventTime: `2026-11-21T10:00:00.${String(999_999_999 - i).padStart(9, '0')}Z`, id: sources.length - i },
  }));
  const repo = {
    reads: 0,
    async list(_account: string, filter: EventFilter, after: EventPosition | undefined, limit: number) {
      repo.reads += 1;
      const start = after ? rows.findIndex((r) => r.position.id === after.id) + 1 : 0;
      return rows.slice(start).filter((r) => !filter.sourceIpPrefix || r.event.source_ip.startsWith(filter.sourceIpPrefix)).slice(0, limit);
    },
  };
  return repo as unknown as EventsRepository & { reads: number };
}

describe('range pages read a bounded number of events (docs/api.md §8)', () => {
  it('ends a page that found nothing within its bound, with a cursor that goes on to the match', async () => {
    // The store narrows 198.51.96.0/20 by "198.51.": all of these pass it, only the last is in the range.
    const sources = [...Array.from({ length: RANGE_SCAN * 2 + 500 }, (_, i) => `198.51.${200 + ((i >> 8) % 56)}.${i & 255}`), '198.51.100.7'];
    const query = new EventQuery(repositoryOf(sources), new EventCursors(new Uint8Array(32).fill(7)));
    const account = { account_id: 'a' } as never;
    const first = await query.list(account, { source_ip: '198.51.96.0/20' });
    expect(first.data).toEqual([]);
    expect(first.next_cursor).not.toBeNull();
    const second = await query.list(account, { source_ip: '198.51.96.0/20', cursor: first.next_cursor! });
    expect(second.data).toEqual([]);
    const third = await query.list(account, { source_ip: '198.51.96.0/20', cursor: second.next_cursor! });
    expect(third.data.map((e) => e.source_ip)).toEqual(['198.51.100.7']);
    expect(third.next_cursor).toBeNull();
  });

  it('a full page stops reading at its limit plus one match', async () => {
    const repo = repositoryOf(Array.from({ length: 5000 }, (_, i) => `10.0.${(i >> 8) & 255}.${i & 255}`));
    const query = new EventQuery(repo, new EventCursors(new Uint8Array(32).fill(7)));
    const page = await query.list({ account_id: 'a' } as never, { source_ip: '10.0.0.0/16', limit: 10 });
    expect(page.data).toHaveLength(10);
    expect(page.next_cursor).not.toBeNull();
    expect(repo.reads).toBe(1);
  });
});
