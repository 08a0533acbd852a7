// Tollwatch dashboard: progressive enhancement only. Every page works without this file; it
// adds copy buttons, folds the events filter on a phone and shows a test alert's attempts as
// they come. Served from this origin (CSP script-src 'self', connect-src 'self'); no inline script.
'use strict';

/** Says what a copy button did, beside it, in words a screen reader announces. */
function copyStatus(button, text) {
  let status = button.nextElementSibling;
  if (!status || !status.classList.contains('copy-status')) {
    status = document.createElement('span');
    status.className = 'copy-status hint';
    status.setAttribute('role', 'status');
    button.after(status);
  }
  status.textContent = text;
}

/** Selects the text, so Ctrl+C (⌘C) copies it where the page may not write the clipboard itself. */
function selectForCopy(source, button, why) {
  const range = document.createRange();
  range.selectNodeContents(source);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  copyStatus(button, `${why}: the text is selected, press Ctrl+C (⌘C on a Mac) to copy it`);
}

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button.copy') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy') || '');
  if (!source) return;
  // The clipboard is offered only to secure contexts (https, or this machine): elsewhere, select.
  if (!navigator.clipboard || !window.isSecureContext) {
    selectForCopy(source, button, 'This page cannot copy by itself');
    return;
  }
  navigator.clipboard.writeText(source.textContent || '').then(
    () => copyStatus(button, 'Copied'),
    () => selectForCopy(source, button, 'Copying was refused'),
  );
});

// A phone folds the events filter (eight fields fill its first screen) unless a filter is in use.
const fold = document.querySelector('details[data-fold-narrow]');
if (fold) {
  const narrow = window.matchMedia('(max-width: 40rem)');
  const follow = () => { fold.open = !narrow.matches; };
  follow();
  narrow.addEventListener('change', follow);
}

// After "Send a test alert": read this page again every 2 seconds, for up to a minute, and show
// its delivery log as it grows, so the attempts appear without a reload.
const log = document.querySelector('#delivery-log[data-watch]');
if (log) {
  const shown = () => log.querySelectorAll('tbody tr').length;
  const status = document.getElementById('delivery-log-status');
  let reads = 0;
  const timer = window.setInterval(async () => {
    reads += 1;
    if (reads > 30) window.clearInterval(timer);
    try {
      const answer = await fetch(window.location.pathname, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
      if (!answer.ok) return;
      const fresh = new DOMParser().parseFromString(await answer.text(), 'text/html').getElementById('delivery-log');
      if (!fresh) return;
      const before = shown();
      const after = fresh.querySelectorAll('tbody tr').length;
      if (after === before) return;
      log.replaceChildren(...fresh.childNodes);
      if (status) status.textContent = `${after - before} new delivery ${after - before === 1 ? 'attempt' : 'attempts'} in the log below.`;
      // Once the test alert's attempt has ended (delivered or given up), nothing more is coming.
      const alert = log.getAttribute('data-watch');
      const ended = [...log.querySelectorAll('tbody tr')].some((row) => row.getAttribute('data-alert') === alert && !row.querySelector('.outcome-retrying'));
      if (ended) window.clearInterval(timer);
    } catch {
      // A read that failed (the network, a restart) is tried again at the next tick.
    }
  }, 2000);
}
