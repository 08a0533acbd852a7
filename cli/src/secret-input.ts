import { createInterface } from 'node:readline';

/**
 * The client secret for `setup`: the first line of standard input when it is a pipe (a script,
 * a secrets manager), or typed at the terminal without being echoed, since a secret on the
 * command line would stay in the shell's history and in every `ps`.
 */
export async function readSecret(input: NodeJS.ReadStream, prompt: NodeJS.WriteStream): Promise<string> {
  if (!input.isTTY) {
    const lines = createInterface({ input, crlfDelay: Infinity });
    for await (const line of lines) {
      lines.close();
      return line.trim();
    }
    return '';
  }
  prompt.write('Client secret (not shown): ');
  input.setRawMode(true);
  input.resume();
  input.setEncoding('utf8');
  let secret = '';
  try {
    for await (const chunk of input) {
      for (const c of chunk as string) {
        if (c === '\r' || c === '\n' || c === '\u0004') return secret.trim();
        if (c === '\u0003') throw new Error('cancelled');
        if (c === '\u007f' || c === '\b') secret = secret.slice(0, -1);
        else secret += c;
      }
    }
    return secret.trim();
  } finally {
    input.setRawMode(false);
    input.pause();
    prompt.write('\n');
  }
}
