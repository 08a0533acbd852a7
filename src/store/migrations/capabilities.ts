/**
 * What a migration may ask of the dialect, as the migrations were written: today's
 * `DialectCapabilities` (src/store/dialect.ts) has these and more, and is passed in, but a
 * migration names only these, so it cannot come to depend on a capability added later.
 */
export interface MigrationCapabilities {
  accessCounter: boolean;
  counterType: 'integer' | 'bigint';
  serialType: 'integer' | 'bigserial';
  partitionedEvents: boolean;
  withoutRowid: boolean;
  jsonObjectAgg: 'json_group_object' | 'json_object_agg';
}
