/**
 * What differs between the stores, named once (capability flags, not `if (dialect)`
 * scattered through queries).
 */
export interface DialectCapabilities {
  name: 'sqlite' | 'postgres';
  /** Column type of 64-bit counters. */
  counterType: 'integer' | 'bigint';
  /** Column type and constraint of the events' surrogate key. */
  serialType: 'integer' | 'bigserial';
  /**
   * Events are range-partitioned by month of `event_time` (declarative partitioning), so old
   * months are dropped whole and partitions must be created ahead of time.
   */
  partitionedEvents: boolean;
}

export const SQLITE: DialectCapabilities = {
  name: 'sqlite',
  counterType: 'integer',
  serialType: 'integer',
  partitionedEvents: false,
};

export const POSTGRES: DialectCapabilities = {
  name: 'postgres',
  counterType: 'bigint',
  serialType: 'bigserial',
  partitionedEvents: true,
};
