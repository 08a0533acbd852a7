// Tollwatch dashboard: progressive enhancement only. Every page works without this file;
// it adds copy buttons. Served from this origin (CSP script-src 'self'); no inline script.
'use strict';
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button.copy') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy') || '');
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent || '').then(
    () => { button.textContent = 'Copied'; },
    () => { button.textContent = 'Copy failed: select the text'; },
  );
});
