// `npm run sdk:types`: writes sdk/src/generated/api-types.ts from the OpenAPI document, so the
// SDK's types are the server's contract and not a copy of it typed by hand.
import { writeFileSync } from 'node:fs';
import { renderApiTypes } from './api-types.ts';
import { openApiDocument } from './openapi-document.ts';

/** Where the generated declarations live; committed, and checked against a fresh generation by a test. */
export const GENERATED_TYPES = new URL('../src/generated/api-types.ts', import.meta.url);

if (import.meta.main) {
  writeFileSync(GENERATED_TYPES, await renderApiTypes(await openApiDocument()));
  console.log(`wrote ${GENERATED_TYPES.pathname}`);
}
