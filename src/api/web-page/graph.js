// The People & things view: entities and memories as a graph (d3-force lays it out once, the page
// draws it as SVG: no animation, light on a phone), and a card for the node one taps: an entity's
// profile with its memories, or a memory with what it links to; names in the card open theirs.

(() => {
  const { api, el, status, explain } = window.Nocturne;

  const SVG = 'http://www.w3.org/2000/svg';
  /** Steps of the force layout before drawing: enough for a few hundred nodes to settle. */
  const LAYOUT_TICKS = 300;
  const ENTITY_RADIUS = 11;
  const MEMORY_RADIUS = 6;
  const LINK_DISTANCE = 55;
  const CHARGE = -140;
  const MARGIN = 30;
  const LABEL_CHARS = 18;
  const GRAVITY = 0.08;

  const state = { graph: null, loaded: false };

  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  const short = (text) => (text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text);

  /** Positions for every node: d3-force run to rest before anything is drawn. */
  function layout(graph, width, height) {
    const nodes = graph.nodes.map((n) => ({ ...n }));
    const ids = new Set(nodes.map((n) => n.id));
    const links = graph.edges.filter((e) => ids.has(e.from) && ids.has(e.to)).map((e) => ({ source: e.from, target: e.to, kind: e.kind }));
    const d3 = window.d3;
    const simulation = d3
      .forceSimulation(nodes)
      .force(
        'link',
        d3
          .forceLink(links)
          .id((n) => n.id)
          .distance(LINK_DISTANCE),
      )
      .force('charge', d3.forceManyBody().strength(CHARGE))
      .force('center', d3.forceCenter(width / 2, height / 2))
      // A weak pull to the middle keeps parts that link to nothing on the screen.
      .force('x', d3.forceX(width / 2).strength(GRAVITY))
      .force('y', d3.forceY(height / 2).strength(GRAVITY))
      .force('collide', d3.forceCollide(ENTITY_RADIUS + 4))
      .stop();
    for (let i = 0; i < LAYOUT_TICKS; i++) simulation.tick();
    return { nodes, links };
  }

  function draw() {
    const box = document.getElementById('graph');
    const graph = state.graph;
    box.replaceChildren();
    box.dataset.nodes = String(graph.nodes.length);
    box.dataset.edges = String(graph.edges.length);
    if (graph.nodes.length === 0) {
      box.append(el('p', { className: 'empty' }, 'No people or things yet.'));
      return;
    }
    const width = Math.max(box.clientWidth, 280);
    const height = Math.round(width * 0.9);
    const { nodes, links } = layout(graph, width, height);
    const xs = nodes.map((n) => n.x);
    const ys = nodes.map((n) => n.y);
    // The drawing's extent, never smaller than the box: a small graph keeps its natural size
    // rather than being blown up to fill the screen.
    const spanX = Math.max(Math.max(...xs) - Math.min(...xs) + 2 * MARGIN, width);
    const spanY = Math.max(Math.max(...ys) - Math.min(...ys) + 2 * MARGIN, height);
    const minX = (Math.max(...xs) + Math.min(...xs) - spanX) / 2;
    const minY = (Math.max(...ys) + Math.min(...ys) - spanY) / 2;
    const viewBox = `${minX} ${minY} ${spanX} ${spanY}`;
    const drawing = svg('svg', { viewBox, width: '100%', height, role: 'img', 'aria-label': 'People, things and memories' });
    const edges = svg('g', { class: 'edges' });
    for (const link of links)
      edges.append(svg('line', { x1: link.source.x, y1: link.source.y, x2: link.target.x, y2: link.target.y, class: `edge ${link.kind}` }));
    const dots = svg('g', { class: 'nodes' });
    for (const node of nodes) {
      const group = svg('g', { class: `node ${node.kind}`, tabindex: 0, 'data-id': node.id, transform: `translate(${node.x},${node.y})` });
      group.append(svg('circle', { r: node.kind === 'entity' ? ENTITY_RADIUS : MEMORY_RADIUS }), svg('title', {}, node.label));
      if (node.kind === 'entity') group.append(svg('text', { y: ENTITY_RADIUS + 12, 'text-anchor': 'middle' }, short(node.label)));
      group.addEventListener('click', () => open(node.id));
      group.addEventListener('keydown', (event) => event.key === 'Enter' && open(node.id));
      dots.append(group);
    }
    drawing.append(edges, dots);
    box.append(drawing);
  }

  function highlight(id) {
    for (const node of document.querySelectorAll('#graph g.node')) node.classList.toggle('selected', node.dataset.id === id);
  }

  /** A name in a card that opens that node's card. */
  function opener(id, label) {
    return el('button', { type: 'button', className: 'link', onclick: () => open(id) }, label);
  }

  function neighbours(id) {
    const byId = new Map(state.graph.nodes.map((n) => [n.id, n]));
    const near = [];
    for (const edge of state.graph.edges) {
      if (edge.from === id && byId.has(edge.to)) near.push({ node: byId.get(edge.to), kind: edge.kind });
      if (edge.to === id && byId.has(edge.from)) near.push({ node: byId.get(edge.from), kind: edge.kind });
    }
    return near;
  }

  async function open(id) {
    const node = state.graph.nodes.find((n) => n.id === id);
    if (!node) return;
    highlight(id);
    const card = document.getElementById('profile-card');
    card.replaceChildren(el('p', { className: 'hint' }, 'Loading…'));
    try {
      card.replaceChildren(...(node.kind === 'entity' ? await entityCard(node) : memoryCard(node)));
      card.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    } catch (error) {
      card.replaceChildren(el('p', { className: 'error' }, explain(error)));
    }
  }

  async function entityCard(node) {
    const answer = await api(`/entities/${encodeURIComponent(node.id)}`);
    const entity = answer.entity || answer;
    const memories = entity.memories || [];
    return [
      el('h3', { className: 'entity-name' }, entity.name || node.label),
      el('p', { className: 'meta' }, entity.kind || 'entity'),
      entity.summary ? el('p', { className: 'summary' }, entity.summary) : null,
      el('h4', {}, memories.length ? 'What Nocturne knows' : 'No memory mentions them yet'),
      el(
        'ul',
        {},
        memories.map((m) => el('li', {}, state.graph.nodes.some((n) => n.id === m.id) ? opener(m.id, m.content) : m.content)),
      ),
    ];
  }

  function memoryCard(node) {
    const near = neighbours(node.id);
    return [
      el('h3', {}, node.label),
      node.category ? el('p', { className: 'meta' }, node.category) : null,
      el('h4', {}, near.length ? 'Linked to' : 'Not linked to anything'),
      el(
        'ul',
        {},
        near.map(({ node: other, kind }) => el('li', {}, `${kind}: `, opener(other.id, other.label))),
      ),
    ];
  }

  async function load() {
    status('Loading people and things…');
    try {
      state.graph = await api('/graph');
      state.graph.nodes = state.graph.nodes || [];
      state.graph.edges = state.graph.edges || [];
      state.loaded = true;
      draw();
      status('');
    } catch (error) {
      status(explain(error), 'error');
    }
  }

  window.Nocturne.views.graph = {
    wire: () => undefined,
    show: () => (state.loaded ? undefined : load()),
    clear: () => {
      state.graph = null;
      state.loaded = false;
      document.getElementById('graph').replaceChildren();
      document.getElementById('profile-card').replaceChildren();
    },
  };
})();
