import { describe, expect, it } from 'vitest';
import { csvField } from '../../src/domain/csv-cells.ts';
import { html, trusted } from '../../src/web/html.ts';

describe('the page template escapes whatever it is given (docs/dashboard.md, "Security")', () => {
  it('escapes text in content and in attributes', () => {
    const hostile = `"><script>alert('x')</script><a href="`;
    const out = html`<p title="${hostile}">${hostile}</p>`.text;
    expect(out).not.toContain('<script>');
    expect(out).toBe('<p title="&#34;&#62;&#60;script&#62;alert(&#39;x&#39;)&#60;/script&#62;&#60;a href=&#34;">&#34;&#62;&#60;script&#62;alert(&#39;x&#39;)&#60;/script&#62;&#60;a href=&#34;</p>');
  });

  it('keeps its own markup, joins lists, and leaves out nothing-values', () => {
    const items = ['<a>', 'b'].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.text).toBe('<ul><li>&#60;a&#62;</li><li>b</li></ul>0');
    expect(html`${trusted('<br>')}`.text).toBe('<br>');
  });
});

describe('CSV fields (docs/dashboard.md, "CSV")', () => {
  it('quotes what needs quoting', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('INVITE\r\nVia: x')).toBe('"INVITE\r\nVia: x"');
  });

  it('defuses cells a spreadsheet would run as formulas, but not signed numbers', () => {
    expect(csvField('=HYPERLINK("http://x")')).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField('+cmd|x')).toBe("'+cmd|x");
    expect(csvField('-2+3+cmd')).toBe("'-2+3+cmd");
    expect(csvField('+46812118532')).toBe('+46812118532');
    expect(csvField('+1 (555) 010-0000')).toBe('+1 (555) 010-0000');
  });
});
