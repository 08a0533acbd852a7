/** Kept aggregates of one called number across the scopes a caller may read. */
export interface NumberAggregate {
  seenCount: number;
  firstSeen: string;
  lastSeen: string;
  sourceIpCount: number;
  sipMethods: Record<string, number>;
  /** Written forms seen (e.g. `0046…`, `+46…`), most seen first. */
  forms: string[];
}

/** Kept aggregates of one source address across the scopes a caller may read. */
export interface IpAggregate {
  seenCount: number;
  firstSeen: string;
  lastSeen: string;
  calledNumberCount: number;
  userAgents: Array<{ user_agent: string; count: number }>;
  transports: Record<string, number>;
}

/** Reads of the kept aggregates: a few index probes each, whatever the number of events. */
export interface LookupsRepository {
  phoneNumber(scopes: string[], numberKey: string): Promise<NumberAggregate | undefined>;
  ipAddress(scopes: string[], sourceIp: string, topUserAgents: number): Promise<IpAggregate | undefined>;
}
