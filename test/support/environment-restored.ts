import { afterAll, vi } from 'vitest';

// A setup file (vitest.config.ts), so it runs for every test file, isolated or not: whatever a
// file set with `vi.stubEnv` (cliEnvironment among others) is given back when its tests end,
// before the worker runs the next file.
afterAll(() => vi.unstubAllEnvs());
