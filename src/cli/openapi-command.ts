import type { Command } from 'commander';
import type { Run } from './command-group.ts';

/**
 * `tollwatch openapi`: prints the OpenAPI document this configuration serves at
 * /api/openapi.json, without a running server: for code generators, the SDK's types and the
 * document's lint.
 */
export function openapiCommand(program: Command, run: Run): void {
  program
    .command('openapi')
    .description('print the OpenAPI document of this configuration (as served at /api/openapi.json)')
    .action(
      run(async (s) => {
        // Imported here: loading the web server is for this command only, not every CLI start.
        const { buildApp } = await import('../app.ts');
        const app = await buildApp(s);
        try {
          await app.ready();
          const document = app.swagger() as object;
          return { json: document, text: JSON.stringify(document, null, 2) };
        } finally {
          await app.close();
        }
      }),
    );
}
