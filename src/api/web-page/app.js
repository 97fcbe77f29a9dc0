// The memory page's start: asks who it speaks for (/app/api/me), then shows the tabs; a refusal
// (401) anywhere clears every view and says how to open the page again.

(() => {
  const { api, download, el, status, explain, session, views } = window.Nocturne;

  const VIEW_NAMES = ['memories', 'timeline', 'graph', 'profile'];

  function select(name) {
    for (const button of document.querySelectorAll('#tabs button')) button.setAttribute('aria-selected', String(button.dataset.view === name));
    for (const view of VIEW_NAMES) document.getElementById(`view-${view}`).hidden = view !== name;
    status('');
    views[name].show();
  }

  function refuse(error) {
    for (const view of VIEW_NAMES) {
      views[view].clear();
      document.getElementById(`view-${view}`).hidden = true;
    }
    document.getElementById('tabs').hidden = true;
    document.getElementById('download').hidden = true;
    const signOut = document.getElementById('sign-out');
    if (signOut) signOut.remove();
    document.body.dataset.state = 'refused';
    status(explain(error), 'error');
  }

  async function saveExport() {
    status('Preparing your export…');
    try {
      const name = await download('/export', 'nocturne-export.json');
      status(`Downloaded ${name}.`, 'ok');
    } catch (error) {
      status(explain(error), 'error');
    }
  }

  function addSignOut() {
    const button = el('button', { type: 'button', id: 'sign-out', className: 'quiet' }, 'Sign out');
    button.addEventListener('click', async () => {
      try {
        await api('/logout', { method: 'POST', body: {} });
      } catch (_) {
        // Signed out or not, the page forgets the session either way.
      }
      refuse(new window.Nocturne.ApiError(401, 'signed out'));
      status('Signed out. Ask the bot for a new link (/web) to open the page again.');
    });
    document.querySelector('header.top').append(button);
  }

  async function start() {
    window.Nocturne.telegramEvent('web_app_ready');
    window.Nocturne.telegramEvent('web_app_expand');
    window.Nocturne.onRefusal(refuse);
    for (const view of VIEW_NAMES) views[view].wire();
    for (const button of document.querySelectorAll('#tabs button')) button.addEventListener('click', () => select(button.dataset.view));
    document.getElementById('download').addEventListener('click', saveExport);
    for (const view of VIEW_NAMES) document.getElementById(`view-${view}`).hidden = true;
    try {
      const me = await api('/me');
      session.csrf = me.csrf || null;
      const title = document.getElementById('title');
      title.textContent = me.scope && me.scope.kind === 'group' ? `Group memory: ${me.scope.title}` : 'Your memory';
      if (me.person?.name) title.append(el('small', { className: 'who' }, me.person.name));
      document.getElementById('tabs').hidden = false;
      document.getElementById('download').hidden = false;
      if (me.via === 'browser') addSignOut();
      document.body.dataset.state = 'ready';
      select('memories');
    } catch (error) {
      if (!(error instanceof window.Nocturne.ApiError && error.status === 401)) {
        document.body.dataset.state = 'failed';
        status(explain(error), 'error');
      }
    }
  }

  start();
})();
