/**
 * What differs between the stores, named once (STYLE.md: capability flags, not `if (dialect)`
 * scattered through queries).
 */
export interface DialectCapabilities {
  name: 'sqlite' | 'postgres';
  /** Column type of 64-bit counters. */
  counterType: 'integer' | 'bigint';
  /** Column type and constraint of the events' surrogate key. */
  serialType: 'integer' | 'bigserial';
  /** One connection does all writes, so writes from concurrent requests are best grouped. */
  singleWriter: boolean;
}

export const SQLITE: DialectCapabilities = {
  name: 'sqlite',
  counterType: 'integer',
  serialType: 'integer',
  singleWriter: true,
};

export const POSTGRES: DialectCapabilities = {
  name: 'postgres',
  counterType: 'bigint',
  serialType: 'bigserial',
  singleWriter: false,
};
