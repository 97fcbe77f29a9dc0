// The memory page's shared parts: who the page speaks for (Telegram's init data or the browser's
// session cookie), the calls to /app/api, the status line, and a DOM builder that only ever sets
// text through textContent, so no stored text is ever read as HTML.

(() => {
  /** Where the init data is kept for a reload inside Telegram (the hash is not always kept). */
  const INIT_DATA_KEY = 'nocturne.initData';

  /** Telegram's init data: from the address (`#tgWebAppData=...`), Telegram's own script, or an earlier load. */
  function readInitData() {
    const hash = new URLSearchParams(window.location.hash.slice(1));
    const fromHash = hash.get('tgWebAppData');
    const fromScript = window.Telegram?.WebApp?.initData;
    let remembered = null;
    try {
      remembered = window.sessionStorage.getItem(INIT_DATA_KEY);
    } catch (_) {
      // Storage may be off (private mode): the hash is then the only source.
    }
    const initData = fromHash || fromScript || remembered || null;
    if (initData) {
      try {
        window.sessionStorage.setItem(INIT_DATA_KEY, initData);
      } catch (_) {
        // Not kept; this load still works.
      }
    }
    return { initData, theme: parseTheme(hash.get('tgWebAppThemeParams')) };
  }

  function parseTheme(json) {
    if (!json) return null;
    try {
      const theme = JSON.parse(json);
      return theme && typeof theme === 'object' ? theme : null;
    } catch (_) {
      return null;
    }
  }

  /** Telegram's colours, when it gave them, as the page's CSS variables. */
  function applyTheme(theme) {
    if (!theme) return;
    const names = {
      bg_color: '--bg',
      text_color: '--fg',
      hint_color: '--hint',
      link_color: '--link',
      button_color: '--accent',
      button_text_color: '--accent-fg',
      secondary_bg_color: '--card',
    };
    for (const [key, variable] of Object.entries(names)) {
      const value = theme[key];
      if (typeof value === 'string' && /^#[0-9a-f]{3,8}$/i.test(value)) document.documentElement.style.setProperty(variable, value);
    }
  }

  const started = readInitData();
  applyTheme(started.theme);

  /** An error answer of /app/api: its status and the server's words. */
  class ApiError extends Error {
    constructor(status, message, code) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  const session = { initData: started.initData, csrf: null };
  const refusalListeners = [];

  function headersFor(method, hasBody) {
    const headers = {};
    if (hasBody) headers['content-type'] = 'application/json';
    if (session.initData) headers['x-telegram-init-data'] = session.initData;
    else if (method !== 'GET' && session.csrf) headers['x-csrf-token'] = session.csrf;
    return headers;
  }

  async function failure(response) {
    let message = `The server answered ${response.status}.`;
    let code;
    try {
      const body = await response.json();
      if (body && typeof body.error === 'string') message = body.error;
      code = body?.code;
    } catch (_) {
      // Not JSON: the status says enough.
    }
    const error = new ApiError(response.status, message, code);
    if (response.status === 401) for (const listener of refusalListeners) listener(error);
    return error;
  }

  /** Calls /app/api`path`; resolves with the JSON answer, rejects with an ApiError. */
  async function api(path, options = {}) {
    const method = options.method || 'GET';
    const hasBody = options.body !== undefined;
    const response = await fetch(`/app/api${path}`, {
      method,
      credentials: 'same-origin',
      headers: headersFor(method, hasBody),
      body: hasBody ? JSON.stringify(options.body) : undefined,
    });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  /** Fetches /app/api`path` and hands it to the browser as a file (the header auth rules out a plain link). */
  async function download(path, fallbackName) {
    const response = await fetch(`/app/api${path}`, { credentials: 'same-origin', headers: headersFor('GET', false) });
    if (!response.ok) throw await failure(response);
    const disposition = response.headers.get('content-disposition') || '';
    const named = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
    const name = named ? decodeURIComponent(named[1]) : fallbackName;
    const url = URL.createObjectURL(await response.blob());
    const link = el('a', { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    return name;
  }

  /**
   * An element with attributes and children; strings become text nodes. Attributes starting with
   * `on` are listeners; `dataset` sets data-*; `className`, `hidden`, `disabled`, `value` set properties.
   */
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
      else if (name === 'dataset') Object.assign(node.dataset, value);
      else if (['className', 'hidden', 'disabled', 'value', 'checked', 'title'].includes(name)) node[name] = value;
      else node.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const statusLine = () => document.getElementById('status');

  /** The status line: `kind` is 'info', 'error' or 'ok'; an empty text hides it. */
  function status(text, kind = 'info') {
    const line = statusLine();
    line.textContent = text || '';
    line.hidden = !text;
    line.dataset.kind = kind;
  }

  /** An error as the person should read it. */
  function explain(error) {
    if (!(error instanceof ApiError)) return 'The server could not be reached. Check the connection and try again.';
    if (error.status === 401) return 'Open this page again from the bot.';
    // A stale CSRF token is mended by a reload; any other refusal says why in the server's words.
    if (error.status === 403) return error.code === 'web.csrf' ? 'This action was refused: reload the page and try again.' : error.message;
    if (error.status === 404) return 'Not found: it may have been forgotten already.';
    return error.message;
  }

  /** A date and time in the reader's own zone, short. */
  function when(iso) {
    if (!iso) return '';
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return String(iso);
    return date.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  }

  /**
   * Tells the Telegram client an event of the Mini App protocol (`web_app_ready`, `web_app_expand`)
   * the way Telegram's own script does, without loading it: through the app's web view bridge on
   * phones and desktops, by a message to the parent frame in Telegram's web clients. Outside
   * Telegram it does nothing.
   */
  function telegramEvent(name) {
    if (!session.initData) return;
    try {
      if (window.TelegramWebviewProxy) window.TelegramWebviewProxy.postEvent(name, '');
      else if (window.parent !== window) window.parent.postMessage(JSON.stringify({ eventType: name, eventData: '' }), '*');
    } catch (_) {
      // A client that does not listen: the page works the same.
    }
  }

  window.Nocturne = {
    telegramEvent,
    api,
    download,
    el,
    status,
    explain,
    when,
    ApiError,
    session,
    /** Each view registers itself here: `{ wire(), show(), clear() }`. */
    views: {},
    onRefusal: (listener) => refusalListeners.push(listener),
  };
})();
