// The Profile view: the soul text, exactly as the agent is given it, and when it was last written.

(() => {
  const { api, el, status, explain, when } = window.Nocturne;

  const state = { loaded: false };

  async function load() {
    status('Loading the profile…');
    try {
      const soul = await api('/soul');
      const box = document.getElementById('soul');
      box.replaceChildren(
        el('div', { className: 'soul-text' }, soul.text || 'No profile yet: it is written after the first nights of sleep.'),
        soul.updatedAt ? el('p', { className: 'meta' }, `Written ${when(soul.updatedAt)}`) : null,
      );
      state.loaded = true;
      status('');
    } catch (error) {
      status(explain(error), 'error');
    }
  }

  window.Nocturne.views.profile = {
    wire: () => undefined,
    show: () => (state.loaded ? undefined : load()),
    clear: () => {
      state.loaded = false;
      document.getElementById('soul').replaceChildren();
    },
  };
})();
