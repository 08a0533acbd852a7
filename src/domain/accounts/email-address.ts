/**
 * An address in the form mail servers take from anyone: RFC 5321's dot-atom local part (letters,
 * digits and ``!#$%&'*+/=?^_`{|}~-``, in dot-separated runs), at most 64 characters, at a domain
 * of at least two LDH labels (letters, digits, hyphens inside), at most 253. Quoted local parts,
 * address literals and unencoded international names are valid on paper but refused by many
 * servers: a form that took `a"><script>…@a.test` let an invitation fail at the mail server, after
 * it was stored. An international domain is written in its `xn--` form.
 */
const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

export function isMailableAddress(text: string): boolean {
  const at = text.lastIndexOf('@');
  if (at < 1) return false;
  const local = text.slice(0, at);
  const domain = text.slice(at + 1);
  if (local.length > 64 || domain.length > 253 || !LOCAL.test(local)) return false;
  const labels = domain.split('.');
  return labels.length >= 2 && labels.every((label) => LABEL.test(label)) && !/^\d+$/.test(labels.at(-1)!);
}
