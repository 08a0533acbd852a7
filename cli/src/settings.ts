import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What the CLI needs to reach the server as one API client. */
export interface ClientSettings {
  url: string;
  clientId: string;
  clientSecret: string;
  audience?: string | undefined;
}

/** The settings and where each came from, for `tollwatch-cli config`. */
export interface ResolvedSettings {
  settings: Partial<ClientSettings>;
  from: Partial<Record<keyof ClientSettings, 'environment' | 'config file'>>;
}

/** The CLI cannot run as asked: its message goes to standard error, and the exit status is 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The variables that override the config file, one per setting (docs/clients.md). */
const ENVIRONMENT: Record<keyof ClientSettings, string> = {
  url: 'TOLLWATCH_URL',
  clientId: 'TOLLWATCH_CLIENT_ID',
  clientSecret: 'TOLLWATCH_CLIENT_SECRET',
  audience: 'TOLLWATCH_AUDIENCE',
};

/** The file's member names: snake_case, as everything JSON in Tollwatch. */
const FILE_NAMES: Record<keyof ClientSettings, string> = { url: 'url', clientId: 'client_id', clientSecret: 'client_secret', audience: 'audience' };

/**
 * The CLI's own directory: TOLLWATCH_CONFIG_DIR, or `tollwatch` under XDG_CONFIG_HOME, or
 * `~/.config/tollwatch`. It holds `config.json` and cached tokens, both readable by the owner only.
 */
export function configDirectory(env: NodeJS.ProcessEnv): string {
  if (env.TOLLWATCH_CONFIG_DIR) return env.TOLLWATCH_CONFIG_DIR;
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'tollwatch');
}

export function configFile(env: NodeJS.ProcessEnv): string {
  return join(configDirectory(env), 'config.json');
}

/**
 * The settings: each from its environment variable when set, else from the config file. A file
 * that others can read is refused, as ssh refuses such a key: it holds a client secret.
 */
export function resolveSettings(env: NodeJS.ProcessEnv): ResolvedSettings {
  const file = readConfigFile(configFile(env));
  const resolved: ResolvedSettings = { settings: {}, from: {} };
  for (const key of Object.keys(ENVIRONMENT) as Array<keyof ClientSettings>) {
    const fromEnvironment = env[ENVIRONMENT[key]];
    const fromFile = file?.[FILE_NAMES[key]];
    if (fromEnvironment) {
      resolved.settings[key] = fromEnvironment;
      resolved.from[key] = 'environment';
    } else if (typeof fromFile === 'string' && fromFile !== '') {
      resolved.settings[key] = fromFile;
      resolved.from[key] = 'config file';
    }
  }
  return resolved;
}

/** The settings a command needs, or a UsageError saying which are missing and how to set them. */
export function requireSettings(env: NodeJS.ProcessEnv): ClientSettings {
  const { settings } = resolveSettings(env);
  const missing = (['url', 'clientId', 'clientSecret'] as const).filter((key) => !settings[key]);
  if (missing.length > 0) {
    throw new UsageError(`not set up: run \`tollwatch-cli setup\`, or set ${missing.map((key) => ENVIRONMENT[key]).join(', ')}`);
  }
  return settings as ClientSettings;
}

/** Writes the config file (and its directory) readable and writable by the owner only. */
export function saveSettings(env: NodeJS.ProcessEnv, settings: ClientSettings): string {
  const directory = configDirectory(env);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const path = configFile(env);
  const body: Record<string, string> = {};
  for (const key of Object.keys(FILE_NAMES) as Array<keyof ClientSettings>) {
    const value = settings[key];
    if (value) body[FILE_NAMES[key]] = value;
  }
  writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
  // The mode given applies only to a new file: an existing one keeps its own.
  chmodSync(path, 0o600);
  return path;
}

function readConfigFile(path: string): Record<string, unknown> | undefined {
  let text: string;
  try {
    const mode = statSync(path).mode;
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
      throw new UsageError(`${path} can be read by others (it holds a client secret): chmod 600 ${path}`);
    }
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // Reported below, with the path.
  }
  throw new UsageError(`${path} is not a JSON object: run \`tollwatch-cli setup\` again`);
}
