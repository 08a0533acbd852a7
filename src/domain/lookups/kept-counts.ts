/**
 * Most distinct names an aggregate keeps counts of, per map: SIP methods and written forms of a
 * number, user agents and transports of an address. The values are chosen by whoever sends
 * probes, so without a bound one number or address could be made to carry millions of names.
 */
export const KEPT_NAMES = 32;

/**
 * Adds `n` sightings of `name` to counts that keep at most `cap` names, by the space-saving
 * rule (Metwally, Agrawal and El Abbadi, 2005): a new name beyond the cap takes the place of
 * the least counted one and inherits its count. Every name seen more often than that least
 * count is kept, and a kept count is too high by at most the least count, so the most seen
 * names, the ones answers show, stay right. Below the cap every count is exact.
 */
export function addCount(counts: Map<string, number>, name: string, n: number, cap = KEPT_NAMES): void {
  const current = counts.get(name);
  if (current !== undefined) counts.set(name, current + n);
  else if (counts.size < cap) counts.set(name, n);
  else {
    let least: [string, number] | undefined;
    // Ties go to the name last in order, so the outcome does not depend on insertion order.
    for (const entry of counts) if (!least || entry[1] < least[1] || (entry[1] === least[1] && entry[0] > least[0])) least = entry;
    counts.delete(least![0]);
    counts.set(name, least![1] + n);
  }
}

/**
 * Counts kept as a JSON object (`{"INVITE":3}`) read into a map, names in the order
 * `JSON.parse` gives them.
 *
 * V8 (Node 24 and 26 alike) can decode an escaped object key as a key it parsed earlier: after
 * `{"\\":0}`, the key of `{"\"":0}` comes back as `\` (nodejs/node#63785, open). Names here
 * are user agents and written forms that attackers choose, so any text with an escape in it is
 * read member by member instead; only string values go through `JSON.parse` there, and values
 * are not affected.
 */
export function countsOf(json: string): Map<string, number> {
  const object = json.includes('\\') ? Object.fromEntries(escapedMembers(json)) : (JSON.parse(json) as Record<string, number>);
  return new Map(Object.entries(object).map(([name, count]) => [name, Number(count)]));
}

/** One `"name": count` member and what follows it; whitespace as PostgreSQL's jsonb writes it. */
const MEMBER = /\s*("(?:[^"\\]|\\.)*")\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([,}])/y;

function escapedMembers(json: string): [string, number][] {
  const text = json.trim();
  const members: [string, number][] = [];
  if (!text.startsWith('{')) throw new SyntaxError('kept counts are not a JSON object');
  MEMBER.lastIndex = 1;
  for (;;) {
    const member = MEMBER.exec(text);
    if (!member) throw new SyntaxError('kept counts are not a JSON object of numbers');
    members.push([JSON.parse(member[1]!) as string, Number(member[2])]);
    if (member[3] === '}') break;
  }
  if (MEMBER.lastIndex !== text.length) throw new SyntaxError('kept counts are not a JSON object');
  return members;
}

/**
 * A map of counts as the JSON object it is kept as, names in the map's order. Written out rather
 * than through an object: the fold writes three of these per aggregate row it touches, and
 * building an object first cost it more than the JSON itself.
 */
export function countsJson(counts: Map<string, number>): string {
  let json = '';
  for (const [name, n] of counts) json += `${json === '' ? '{' : ','}${JSON.stringify(name)}:${JSON.stringify(n)}`;
  return json === '' ? '{}' : `${json}}`;
}
