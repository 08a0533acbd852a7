import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderApiTypes } from '../../sdk/scripts/api-types.ts';
import { GENERATED_TYPES } from '../../sdk/scripts/generate-types.ts';
import { openApiDocument } from '../../sdk/scripts/openapi-document.ts';

describe('the SDK’s generated types', () => {
  it('are what the OpenAPI document generates today (run `npm run sdk:types` after changing a route)', async () => {
    const fresh = await renderApiTypes(await openApiDocument());
    expect(readFileSync(GENERATED_TYPES, 'utf8')).toBe(fresh);
  });
});
