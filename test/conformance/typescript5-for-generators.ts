/**
 * Loaded with `node --import` into a code generator that prints its TypeScript through the
 * compiler's API (@hey-api/openapi-ts): the project's TypeScript 7 is a native compiler without
 * that API, so in that process `typescript` is TypeScript 5, the `typescript5` devDependency.
 */
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'typescript') return nextResolve('typescript5', { ...context, parentURL: import.meta.url });
    return nextResolve(specifier, context);
  },
});
