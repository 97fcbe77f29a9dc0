// The Memories view: what Nocturne knows, by category, with confidence, dates and the messages it
// came from (on tap); search, a category filter and "show faded"; and the actions on one memory:
// correct (inline), forget (the preview first, then the confirmation), pin or unpin.

(() => {
  const { api, el, status, explain, when } = window.Nocturne;

  /** Wait after the last key before searching, so typing does not send a search per letter. */
  const SEARCH_DELAY_MS = 300;

  const state = { memories: [], categories: new Set(), loaded: false, request: 0 };

  const listBox = () => document.getElementById('memory-list');

  function query() {
    const params = new URLSearchParams();
    const q = document.getElementById('search').value.trim();
    const category = document.getElementById('category').value;
    if (q) params.set('q', q);
    if (category) params.set('category', category);
    if (document.getElementById('faded').checked) params.set('all', '1');
    const text = params.toString();
    return text ? `?${text}` : '';
  }

  async function load() {
    const request = ++state.request;
    status('Loading your memories…');
    try {
      const answer = await api(`/memories${query()}`);
      if (request !== state.request) return;
      state.memories = answer.memories || [];
      state.loaded = true;
      for (const memory of state.memories) state.categories.add(memory.category);
      fillCategories();
      render();
      status('');
    } catch (error) {
      if (request === state.request) status(explain(error), 'error');
    }
  }

  function fillCategories() {
    const select = document.getElementById('category');
    const have = new Set(Array.from(select.options, (option) => option.value));
    for (const category of Array.from(state.categories).sort()) {
      if (!have.has(category)) select.append(el('option', { value: category }, category));
    }
  }

  function render() {
    const box = listBox();
    box.replaceChildren();
    if (state.memories.length === 0) {
      box.append(el('p', { className: 'empty' }, document.getElementById('search').value.trim() ? 'Nothing matches that search.' : 'Nothing remembered yet.'));
      return;
    }
    const byCategory = new Map();
    for (const memory of state.memories) {
      if (!byCategory.has(memory.category)) byCategory.set(memory.category, []);
      byCategory.get(memory.category).push(memory);
    }
    for (const [category, memories] of Array.from(byCategory).sort(([a], [b]) => a.localeCompare(b))) {
      box.append(el('h2', { className: 'category' }, `${category} (${memories.length})`), ...memories.map(card));
    }
  }

  function confidenceBar(confidence) {
    const percent = Math.round(Math.max(0, Math.min(1, Number(confidence) || 0)) * 100);
    return el(
      'span',
      { className: 'confidence', title: `confidence ${percent}%` },
      el('span', { className: 'bar' }, el('span', { className: 'fill', style: `width:${percent}%` })),
      ` ${percent}%`,
    );
  }

  function card(memory) {
    const article = el('article', { className: `memory${memory.faded ? ' faded' : ''}${memory.pinned ? ' pinned' : ''}`, dataset: { id: memory.id } });
    const content = el('p', { className: 'content', role: 'button', tabindex: '0', onclick: () => toggleDetail(article, memory) }, memory.content);
    const meta = el(
      'p',
      { className: 'meta' },
      confidenceBar(memory.confidence),
      el('span', {}, ` · learned ${when(memory.createdAt)}`),
      memory.updatedAt && memory.updatedAt !== memory.createdAt ? el('span', {}, ` · updated ${when(memory.updatedAt)}`) : null,
      memory.pinned ? el('span', { className: 'badge pin-badge' }, 'pinned') : null,
      memory.faded ? el('span', { className: 'badge' }, 'faded') : null,
    );
    const actions = memory.faded
      ? null
      : el(
          'div',
          { className: 'actions' },
          el('button', { type: 'button', className: 'correct', onclick: () => startCorrect(article, memory) }, 'Correct'),
          el('button', { type: 'button', className: 'forget', onclick: () => previewForget(article, memory) }, 'Forget'),
          el('button', { type: 'button', className: 'pin', onclick: () => togglePin(article, memory) }, memory.pinned ? 'Unpin' : 'Pin'),
        );
    article.append(content, meta, el('div', { className: 'panel', hidden: true }));
    if (actions) article.append(actions);
    return article;
  }

  function replaceCard(article, memory) {
    const index = state.memories.findIndex((m) => m.id === article.dataset.id);
    if (index >= 0) state.memories[index] = memory;
    const fresh = card(memory);
    article.replaceWith(fresh);
    return fresh;
  }

  function panelOf(article) {
    const panel = article.querySelector('.panel');
    panel.replaceChildren();
    panel.hidden = false;
    return panel;
  }

  async function toggleDetail(article, memory) {
    const panel = article.querySelector('.panel');
    if (!panel.hidden && panel.dataset.kind === 'detail') {
      panel.hidden = true;
      return;
    }
    const box = panelOf(article);
    box.dataset.kind = 'detail';
    box.append(el('p', { className: 'hint' }, 'Loading where this came from…'));
    try {
      const detail = await api(`/memories/${encodeURIComponent(memory.id)}`);
      box.replaceChildren(...detailParts(detail.memory || detail));
    } catch (error) {
      box.replaceChildren(el('p', { className: 'error' }, explain(error)));
    }
  }

  function detailParts(detail) {
    const parts = [];
    const sources = detail.sources || [];
    parts.push(el('h3', {}, sources.length ? 'From these messages' : 'No message is kept for this memory'));
    if (sources.length)
      parts.push(
        el(
          'ul',
          { className: 'sources' },
          sources.map((s) => el('li', {}, el('time', {}, when(s.at)), ' ', s.text)),
        ),
      );
    const history = detail.history || [];
    if (history.length) {
      parts.push(el('h3', {}, 'Earlier versions'));
      parts.push(
        el(
          'ul',
          { className: 'history' },
          history.map((h) => el('li', {}, el('time', {}, when(h.validFrom || h.createdAt)), ' ', h.content)),
        ),
      );
    }
    const links = detail.links || [];
    if (links.length) {
      parts.push(el('h3', {}, 'Linked'));
      parts.push(
        el(
          'ul',
          { className: 'links' },
          links.map((l) => el('li', {}, `${l.kind}: `, l.content)),
        ),
      );
    }
    return parts;
  }

  function startCorrect(article, memory) {
    const box = panelOf(article);
    box.dataset.kind = 'correct';
    const input = el('textarea', { className: 'correction', rows: '3', 'aria-label': 'The corrected memory' });
    input.value = memory.content;
    const save = el('button', { type: 'button', className: 'primary save' }, 'Save');
    save.addEventListener('click', async () => {
      const content = input.value.trim();
      if (!content) return status('Write the corrected memory first.', 'error');
      save.disabled = true;
      try {
        const answer = await api(`/memories/${encodeURIComponent(memory.id)}/correct`, { method: 'POST', body: { content } });
        replaceCard(article, { ...memory, ...answer.memory });
        status('Corrected. The earlier version is kept in its history.', 'ok');
      } catch (error) {
        save.disabled = false;
        status(explain(error), 'error');
      }
    });
    const cancel = el('button', { type: 'button', onclick: () => (box.hidden = true) }, 'Cancel');
    box.append(input, el('div', { className: 'actions' }, save, cancel));
    input.focus();
  }

  async function previewForget(article, memory) {
    const box = panelOf(article);
    box.dataset.kind = 'forget';
    box.append(el('p', { className: 'hint' }, 'Checking what would be forgotten…'));
    try {
      const { preview } = await api(`/memories/${encodeURIComponent(memory.id)}/forget`, { method: 'POST', body: { confirm: false } });
      const confirm = el('button', { type: 'button', className: 'danger confirm-forget' }, 'Forget it');
      confirm.addEventListener('click', async () => {
        confirm.disabled = true;
        try {
          const answer = await api(`/memories/${encodeURIComponent(memory.id)}/forget`, { method: 'POST', body: { confirm: true } });
          state.memories = state.memories.filter((m) => m.id !== memory.id);
          article.remove();
          status(`Forgotten (${answer.forgotten} ${answer.forgotten === 1 ? 'version' : 'versions'}).`, 'ok');
        } catch (error) {
          confirm.disabled = false;
          status(explain(error), 'error');
        }
      });
      box.replaceChildren(
        el('p', { className: 'preview-count' }, `This forgets ${preview.count} ${preview.count === 1 ? 'item' : 'items'}:`),
        el('p', { className: 'preview' }, preview.text),
        el('div', { className: 'actions' }, confirm, el('button', { type: 'button', onclick: () => (box.hidden = true) }, 'Keep it')),
      );
    } catch (error) {
      box.replaceChildren(el('p', { className: 'error' }, explain(error)));
    }
  }

  async function togglePin(article, memory) {
    const pinned = !memory.pinned;
    try {
      const answer = await api(`/memories/${encodeURIComponent(memory.id)}/pin`, { method: 'POST', body: { pinned } });
      replaceCard(article, { ...memory, ...answer.memory, pinned: answer.memory ? answer.memory.pinned : pinned });
      status(pinned ? 'Pinned: this memory will not fade.' : 'Unpinned: it fades like any other when unused.', 'ok');
    } catch (error) {
      status(explain(error), 'error');
    }
  }

  function wire() {
    let timer = null;
    document.getElementById('search').addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(load, SEARCH_DELAY_MS);
    });
    document.getElementById('category').addEventListener('change', load);
    document.getElementById('faded').addEventListener('change', load);
  }

  window.Nocturne.views.memories = {
    wire,
    show: () => (state.loaded ? undefined : load()),
    clear: () => {
      state.memories = [];
      listBox().replaceChildren();
    },
  };
})();
