import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices } from '../../src/services.ts';

/**
 * The OpenAPI document the server publishes at /api/openapi.json, built in-process on an
 * in-memory store, as `tollwatch openapi` prints it. The environment and `.env` are ignored on
 * purpose: the SDK's types must not depend on the machine that generated them.
 */
export async function openApiDocument(): Promise<OpenApiDocument> {
  const services = await createServices(loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' }, false));
  try {
    const app = await buildApp(services);
    try {
      await app.ready();
      // Through JSON, as /api/openapi.json serves it: only what survives serialisation is the document.
      return JSON.parse(JSON.stringify(app.swagger())) as OpenApiDocument;
    } finally {
      await app.close();
    }
  } finally {
    await services.close();
  }
}

/** The parts of an OpenAPI 3.1 document the type generator reads. */
export interface OpenApiDocument {
  components: { schemas: Record<string, JsonSchema> };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

/** One operation of the document. */
export interface OpenApiOperation {
  operationId: string;
  parameters?: Array<{ in: string; name: string; required?: boolean; description?: string; schema: JsonSchema }>;
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema: JsonSchema }> }>;
}

/** A JSON Schema, as far as the generator cares. */
export type JsonSchema = Record<string, unknown>;
