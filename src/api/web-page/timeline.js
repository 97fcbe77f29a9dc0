// The Timeline view: learned, updated and faded memories night by night as a uPlot chart, and the
// night's digest on tap (on the chart, or in the list of nights under it).

(() => {
  const { api, el, status, explain } = window.Nocturne;

  /** How far back the chart reaches. */
  const DAYS = 60;
  const CHART_HEIGHT = 220;
  const SECONDS_PER_MS = 1 / 1000;
  const SERIES = [
    { key: 'learned', label: 'Learned', stroke: '#2f9e44' },
    { key: 'updated', label: 'Updated', stroke: '#1971c2' },
    { key: 'faded', label: 'Faded', stroke: '#868e96' },
  ];

  /** The chart starts a little before the first night with anything in it, but shows at least this many nights. */
  const MIN_NIGHTS = 14;
  const LEAD_NIGHTS = 2;

  const state = { nights: [], chart: null, loaded: false };

  const active = (night) => Boolean(night.learned || night.updated || night.faded || night.digest);

  /** The nights the chart draws: the quiet weeks before the first event are left out. */
  function drawnNights() {
    const first = state.nights.findIndex(active);
    if (first < 0) return state.nights.slice(-MIN_NIGHTS);
    const start = Math.max(0, Math.min(first - LEAD_NIGHTS, state.nights.length - MIN_NIGHTS));
    return state.nights.slice(start);
  }

  /** A night's date (YYYY-MM-DD) as uPlot's x value: seconds at midnight UTC of that date. */
  const xOf = (date) => Date.parse(`${date}T00:00:00Z`) * SECONDS_PER_MS;

  function showNight(index) {
    const night = state.nights[index];
    const box = document.getElementById('night');
    if (!night) return box.replaceChildren();
    const counts = SERIES.map((s) => `${night[s.key]} ${s.key}`).join(' · ');
    box.replaceChildren(
      el('h3', {}, night.date),
      el('p', { className: 'meta' }, counts),
      el('p', { className: 'digest' }, night.digest || 'No digest was written that night.'),
    );
  }

  function drawChart() {
    const box = document.getElementById('chart');
    if (state.chart) state.chart.destroy();
    box.replaceChildren();
    const nights = drawnNights();
    box.dataset.points = String(nights.length);
    box.dataset.first = nights.length ? nights[0].date : '';
    if (nights.length === 0) {
      box.append(el('p', { className: 'empty' }, 'No nights yet: the chart fills in as Nocturne sleeps.'));
      state.chart = null;
      return;
    }
    const data = [nights.map((n) => xOf(n.date)), ...SERIES.map((s) => nights.map((n) => Number(n[s.key]) || 0))];
    const offset = state.nights.length - nights.length;
    const options = {
      width: Math.max(box.clientWidth, 280),
      height: CHART_HEIGHT,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{ stroke: 'currentColor' }, { stroke: 'currentColor' }],
      series: [{}, ...SERIES.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, points: { show: true, size: 6 } }))],
      cursor: { drag: { x: false, y: false } },
      legend: { live: false },
    };
    state.chart = new window.uPlot(options, data, box);
    state.chart.over.addEventListener('click', () => {
      const index = state.chart.cursor.idx;
      if (index !== null && index !== undefined) showNight(index + offset);
    });
  }

  function drawList() {
    const list = document.getElementById('nights');
    const shown = state.nights.map((night, index) => ({ night, index })).filter(({ night }) => active(night));
    list.replaceChildren(
      ...shown
        .reverse()
        .map(({ night, index }) =>
          el(
            'li',
            {},
            el(
              'button',
              { type: 'button', className: 'night', dataset: { date: night.date }, onclick: () => showNight(index) },
              `${night.date}: +${night.learned} learned, ${night.updated} updated, ${night.faded} faded`,
            ),
          ),
        ),
    );
  }

  async function load() {
    status('Loading the timeline…');
    try {
      const answer = await api(`/timeline?days=${DAYS}`);
      state.nights = (answer.nights || []).slice().sort((a, b) => a.date.localeCompare(b.date));
      state.loaded = true;
      drawChart();
      drawList();
      status('');
    } catch (error) {
      status(explain(error), 'error');
    }
  }

  function wire() {
    let timer = null;
    window.addEventListener('resize', () => {
      clearTimeout(timer);
      timer = setTimeout(() => state.chart?.setSize({ width: Math.max(document.getElementById('chart').clientWidth, 280), height: CHART_HEIGHT }), 150);
    });
  }

  window.Nocturne.views.timeline = {
    wire,
    show: () => (state.loaded ? undefined : load()),
    clear: () => {
      if (state.chart) state.chart.destroy();
      state.chart = null;
      state.nights = [];
      state.loaded = false;
      for (const id of ['chart', 'night', 'nights']) document.getElementById(id).replaceChildren();
    },
  };
})();
