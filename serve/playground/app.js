// The playground of an agent-sdk host: plain DOM, no framework, no build.
// Every text that comes from the API is put in the page as a text node
// (h, textContent): nothing from the API is ever parsed as HTML.
'use strict';
(() => {
  const meta = n => document.querySelector('meta[name="' + n + '"]').getAttribute('content');
  const CSRF = meta('csrf-token'), BASE = meta('agent-base'), API = BASE + '/v1', SIGNIN = BASE + '/playground/signin';
  const KINDS = ['session.created', 'session.tagged', 'turn.started', 'workspace.moved', 'message.delta', 'message', 'actions.requested',
    'action.approval_requested', 'action.approval_resolved', 'action.progress', 'action.output', 'action.result', 'artifact.created',
    'turn.completed', 'turn.failed', 'channel.started', 'reminder.set', 'reminder.fired', 'reasoning.delta', 'reasoning', 'model.retry',
    'context.cleared', 'context.compacted', 'turn.resumed', 'action.approval_voted', 'plan', 'harness.session'];
  const main = document.getElementById('main');
  const enc = encodeURIComponent;

  // h makes an element: props set attributes (on* add listeners; value and
  // checked set properties), and every child that is not a Node becomes a
  // text node.
  function h(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'value' || k === 'checked') e[k] = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    return add(e, kids);
  }
  function add(e, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k == null || k === false) continue;
      e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }
  const txt = (e, s) => { e.textContent = s == null ? '' : String(s); return e; };

  // api calls the API with the page's cookie; every request carries the
  // CSRF token. A 401 means the session ended: back to the sign-in page.
  async function api(method, path, body) {
    const opts = { method, credentials: 'same-origin', headers: { 'X-CSRF-Token': CSRF, Accept: 'application/json' } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(API + path, opts);
    } catch (err) {
      return { status: 0, body: { ok: false, error: { code: 'network', message: String(err) } }, text: '' };
    }
    const text = await resp.text();
    if (resp.status === 401) location.assign(SIGNIN);
    let data = null;
    try { data = JSON.parse(text); } catch (_) { /* not JSON */ }
    return { status: resp.status, body: data, text };
  }
  function errText(res) {
    const e = res.body && res.body.error;
    return e ? res.status + ' ' + e.code + ': ' + e.message : 'HTTP ' + res.status + ' ' + res.text.slice(0, 200);
  }

  // indent pretty-prints JSON text as it is (numbers and key order kept).
  function indent(s) {
    let out = '', depth = 0, inStr = false, esc = false;
    const nl = () => '\n' + '  '.repeat(depth);
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (inStr) {
        out += c;
        if (esc) esc = false; else if (c === '\\') esc = true; else if (c === '"') inStr = false;
        continue;
      }
      if (c === '"') { inStr = true; out += c; } else if (c === '{' || c === '[') {
        const close = c === '{' ? '}' : ']';
        let j = i + 1;
        while (/\s/.test(s[j] || '')) j++;
        if (s[j] === close) { out += c + close; i = j; } else { depth++; out += c + nl(); }
      } else if (c === '}' || c === ']') { depth--; out += nl() + c; } else if (c === ',') out += ',' + nl();
      else if (c === ':') out += ': ';
      else if (!/\s/.test(c)) out += c;
    }
    return out;
  }
  const pretty = v => v === undefined ? '' : JSON.stringify(v, null, 2);
  const when = t => t ? new Date(t).toLocaleString() : '';
  const seconds = ms => ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(1) + ' s';
  const clock = t => t ? new Date(t).toLocaleTimeString() : '';
  function ago(t) {
    const s = Math.max(0, (Date.now() - new Date(t)) / 1000);
    return s < 60 ? Math.round(s) + 's ago' : s < 3600 ? Math.round(s / 60) + 'm ago' : s < 86400 ? Math.round(s / 3600) + 'h ago' : when(t);
  }
  const stamp = t => h('time', { datetime: t, title: when(t) }, clock(t));
  const sessionLink = id => h('a', { href: '#/sessions/' + enc(id), class: 'session-link' }, id);

  // Usage and cost, as the CLI shows them: costs are integers of
  // micro-dollars (never summed as floats), null when a model has no
  // price — shown as —, never as $0.
  const count = n => Number(n || 0).toLocaleString('en-US');
  function money(m) {
    if (m == null) return '—';
    const n = Math.abs(m), frac = String(n % 1e6).padStart(6, '0').replace(/0+$/, '').padEnd(2, '0');
    return (m < 0 ? '−' : '') + '$' + Math.floor(n / 1e6) + '.' + frac;
  }
  const allTokens = u => (u.inputTokens || 0) + (u.outputTokens || 0) + (u.cacheReadTokens || 0) + (u.cacheWriteTokens || 0);
  function usageText(u) {
    if (!u.modelCalls && !allTokens(u)) return 'no model calls';
    let tokens = 'tokens ' + count(u.inputTokens) + ' in, ' + count(u.outputTokens) + ' out';
    if (u.reasoningTokens) tokens += ' (' + count(u.reasoningTokens) + ' reasoning)';
    if (u.cacheReadTokens) tokens += ', ' + count(u.cacheReadTokens) + ' cache read';
    if (u.cacheWriteTokens) tokens += ', ' + count(u.cacheWriteTokens) + ' cache write';
    return (u.modelCalls === 1 ? '1 model call' : count(u.modelCalls) + ' model calls') + ' · ' + tokens +
      ' · cost ' + money(u.costMicroUsd) + (u.costMicroUsd == null ? ' (no price for the model)' : '');
  }
  // costCell and tokensCell are a usage's cells of a table ('' without one).
  const costCell = u => h('td', { class: 'cost' + (u && u.costMicroUsd == null ? ' no-price' : ''), title: u && u.costMicroUsd == null ? 'no price for the model' : null }, u ? money(u.costMicroUsd) : '');
  const tokensCell = u => h('td', { class: 'tokens', title: u ? usageText(u) : null }, u ? count(allTokens(u)) : '');

  // Views: each route renders into main; onLeave undoes timers and streams.
  let leaving = [];
  const onLeave = f => leaving.push(f);
  function every(ms, f) { const t = setInterval(f, ms); onLeave(() => clearInterval(t)); }
  function view(title, id, ...extra) {
    const root = h('section', { id, class: 'view' }, h('h1', {}, title), ...extra);
    main.replaceChildren(root);
    return root;
  }
  function route() {
    leaving.forEach(f => f());
    leaving = [];
    let parts;
    try { parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent); } catch (_) { parts = []; }
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.getAttribute('href') === '#/' + parts[0]);
    const [page, a, b, c] = parts;
    if (page === 'sessions') a ? sessionView(a) : sessionsView();
    else if (page === 'approvals') approvalsView();
    else if (page === 'tools') a ? toolView(a) : toolsView();
    else if (page === 'evals') b === 'vs' && c ? compareView(a, c) : a ? evalView(a) : evalsView();
    else location.replace('#/sessions');
  }

  // ---- Sessions ----
  function sessionsView() {
    const msg = h('textarea', { id: 'new-session-message', rows: 3, placeholder: 'A message to start the session with' });
    const chan = h('input', { id: 'new-session-channel', type: 'text', placeholder: 'channel (optional)' });
    const err = h('p', { id: 'new-session-error', class: 'error' });
    const form = h('form', { id: 'new-session-form', class: 'card' }, h('label', { for: 'new-session-message', class: 'field-name' }, 'New session'), msg,
      h('div', { class: 'row' }, chan, h('button', { type: 'submit', id: 'new-session-submit' }, 'Start')), err);
    form.addEventListener('submit', async ev => {
      ev.preventDefault();
      const body = { message: msg.value };
      if (chan.value.trim()) body.channel = chan.value.trim();
      const res = await api('POST', '/session', body);
      if (res.status === 201) location.hash = '#/sessions/' + enc(res.body.sessionId);
      else txt(err, errText(res));
    });
    const rows = h('tbody', { id: 'sessions-list' });
    const more = h('button', { type: 'button', id: 'sessions-more', hidden: true }, 'More');
    const status = h('p', { class: 'error', id: 'sessions-error' });
    const root = view('Sessions', 'sessions-view', form, status,
      h('table', { class: 'list' }, h('thead', {}, h('tr', {}, ['Session', 'Channel', 'Principal', 'State', 'Tokens', 'Cost', 'Last activity'].map(t => h('th', {}, t)))), rows), more);
    let next = '', shown = 0;
    const row = s => h('tr', { class: 'session', 'data-id': s.id }, h('td', {}, sessionLink(s.id)), h('td', {}, s.channel), h('td', {}, s.principal),
      h('td', { class: 'state ' + (s.runningTurn ? 'running' : 'idle') }, s.runningTurn ? 'running ' + s.runningTurn : 'idle'),
      tokensCell(s.usage), costCell(s.usage), h('td', { title: when(s.updatedAt) }, ago(s.updatedAt)));
    async function load(append) {
      const limit = append ? 50 : Math.min(1000, Math.max(50, shown));
      const res = await api('GET', '/sessions?limit=' + limit + (append && next ? '&cursor=' + enc(next) : ''));
      if (!root.isConnected) return;
      if (res.status !== 200) return txt(status, errText(res));
      txt(status, '');
      const list = res.body.sessions.map(row);
      if (append) rows.append(...list); else rows.replaceChildren(...list);
      if (append || !shown) next = res.body.next;
      shown = rows.children.length;
      more.hidden = !next;
    }
    more.addEventListener('click', () => load(true));
    load(false);
    every(5000, () => load(false));
  }

  // decider is the Approve / Deny control of a parked call, with an editor
  // of its input (an approval may run an edited input: the host checks it
  // against the tool's schema); done gets the decided approval (or the
  // first decision, on 409), voted an approval short of its quorum.
  function decider(path, done, input, voted) {
    const reason = h('input', { type: 'text', class: 'reason', placeholder: 'reason (optional)' });
    const err = h('span', { class: 'error decide-error' });
    const asked = input === undefined ? '' : pretty(input);
    const editor = h('textarea', { class: 'edit-input', rows: 4, hidden: true, value: asked, 'aria-label': 'input to run' });
    const edit = h('button', { type: 'button', class: 'edit', onclick: () => { editor.hidden = !editor.hidden; } }, 'Edit input');
    const decide = approved => async () => {
      txt(err, '');
      const body = { approved, reason: reason.value }; // the decider is the signed-in principal
      if (approved && !editor.hidden && editor.value.trim() !== asked.trim()) {
        try { body.input = JSON.parse(editor.value); } catch (e) { txt(err, 'the edited input is not JSON: ' + e.message); return; }
      }
      for (const b of box.querySelectorAll('button')) b.disabled = true;
      const res = await api('POST', path, body);
      const first = res.body && res.body.error && res.body.error.approval;
      const a = res.status === 200 ? res.body.approval : first;
      if (a && a.status === 'pending') { if (voted) voted(a); } else if (a) done(a);
      if (res.status !== 200) txt(err, errText(res));
      if (res.status !== 200 || (a && a.status === 'pending')) for (const b of box.querySelectorAll('button')) b.disabled = false;
    };
    const box = h('div', { class: 'decide' }, reason, h('button', { type: 'button', class: 'approve', onclick: decide(true) }, 'Approve'),
      h('button', { type: 'button', class: 'deny', onclick: decide(false) }, 'Deny'), input === undefined ? null : edit, err, editor);
    return box;
  }
  // votes shows a call's approvals of its quorum: "approvals: 1 of 2 (…)".
  function votes(n, quorum, by) {
    return h('div', { class: 'approval-votes' }, 'approvals: ', h('strong', { class: 'vote-count' }, n + ' of ' + quorum), by && by.length ? [' (', by.join(', '), ')'] : null);
  }
  // changes shows how an approver's edit changed the input: path, from
  // what was asked to what runs.
  function changes(list) {
    if (!list || !list.length) return null;
    return h('div', { class: 'approval-changes' }, h('div', { class: 'mute' }, 'edited before approval (what runs):'),
      h('ul', {}, list.map(c => h('li', { class: 'change' }, h('code', { class: 'change-path' }, c.path), ': ',
        h('del', {}, c.from === undefined ? '(absent)' : JSON.stringify(c.from)), ' → ', h('ins', {}, c.to === undefined ? '(absent)' : JSON.stringify(c.to))))));
  }
  // diffOf lists the changes from asked to edited, field by field through
  // objects (as the host's api.DiffInput does).
  function diffOf(asked, edited, path = 'input', out = []) {
    const obj = v => v && typeof v === 'object' && !Array.isArray(v);
    if (obj(asked) && obj(edited)) {
      for (const k of [...new Set([...Object.keys(asked), ...Object.keys(edited)])].sort()) diffOf(asked[k], edited[k], path + '.' + k, out);
    } else if (JSON.stringify(asked) !== JSON.stringify(edited)) out.push({ path, from: asked, to: edited });
    return out;
  }
  function decision(a) {
    return [h('strong', { class: 'approval-status ' + a.status }, a.status), a.decidedBy || a.by ? [' by ', h('span', { class: 'decided-by' }, a.decidedBy || a.by)] : null,
      a.decidedAt || a.at ? [' at ', h('time', { class: 'decided-at', datetime: a.decidedAt || a.at }, when(a.decidedAt || a.at))] : null,
      a.reason ? [': ', h('span', { class: 'decided-reason' }, a.reason)] : null];
  }

  // sessionView follows one session's trajectory live over its event
  // stream; EventSource resumes with Last-Event-ID by itself.
  function sessionView(id) {
    const state = h('span', { id: 'session-state', class: 'state' }, '…');
    const live = h('span', { id: 'stream-status', class: 'stream' }, 'connecting');
    const info = h('span', { id: 'session-info', class: 'mute' });
    const spent = h('span', { id: 'session-usage', class: 'usage' });
    const traj = h('ol', { id: 'trajectory' });
    const msg = h('textarea', { id: 'send-message', rows: 3, placeholder: 'Message' });
    const err = h('p', { id: 'send-error', class: 'error' });
    const cancel = h('button', { type: 'button', id: 'cancel-turn', hidden: true }, 'Cancel turn');
    const form = h('form', { id: 'send-form', class: 'card' }, msg, h('div', { class: 'row' }, h('button', { type: 'submit', id: 'send-submit' }, 'Send'), cancel), err);
    const root = view('Session', 'session-view', h('div', { class: 'row' }, h('code', { id: 'session-id' }, id), state, live, info), h('div', { class: 'row' }, spent), traj, form);
    let last = 0, es = null, running = '';
    const calls = new Map(), deltas = new Map(), thinking = new Map();
    const setState = turn => {
      running = turn || '';
      txt(state, running ? 'running ' + running : 'idle').className = 'state ' + (running ? 'running' : 'idle');
      cancel.hidden = !running;
    };
    api('GET', '/session/' + enc(id)).then(res => {
      if (res.status !== 200) return txt(err, errText(res));
      const s = res.body.session;
      // The stream may have shown the turn end before this answer came.
      if (s.lastSeq >= last) setState(s.runningTurn);
      txt(info, s.channel + ' · ' + s.mode + ' · ' + s.principal + ' · created ' + when(s.createdAt));
      showSpent(s);
    });
    // The session's usage, in its header: read again (once, however many
    // turns a replay ends at once) after a model turn ends.
    function showSpent(s) { if (s.usage) txt(spent, 'Σ session: ' + usageText(s.usage)).classList.toggle('no-price', s.usage.costMicroUsd == null); }
    let spentTimer = null;
    onLeave(() => clearTimeout(spentTimer));
    const respend = () => {
      clearTimeout(spentTimer);
      spentTimer = setTimeout(async () => {
        const res = await api('GET', '/session/' + enc(id));
        if (res.status === 200 && root.isConnected) showSpent(res.body.session);
      }, 250);
    };
    form.addEventListener('submit', async ev => {
      ev.preventDefault();
      const res = await api('POST', '/session/' + enc(id) + '/messages', { message: msg.value });
      if (res.status === 202) { msg.value = ''; txt(err, ''); } else txt(err, errText(res));
    });
    cancel.addEventListener('click', async () => {
      const res = await api('POST', '/session/' + enc(id) + '/cancel');
      txt(err, res.status === 200 ? '' : errText(res));
    });

    // Follow the end while the reader is at it: the scroll position is
    // read on scroll (not per event, which forced a layout each time), and
    // the end is kept once a frame, after items and the parts added to them.
    let follow = true, queued = false;
    const onScroll = () => { follow = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40; };
    window.addEventListener('scroll', onScroll, { passive: true });
    onLeave(() => window.removeEventListener('scroll', onScroll));
    const keepEnd = () => {
      if (queued || !follow) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; if (follow) window.scrollTo(0, document.documentElement.scrollHeight); });
    };
    function put(li) {
      traj.appendChild(li);
      return li;
    }
    const item = (cls, e, ...kids) => put(h('li', { class: 'ev ' + cls, 'data-seq': e.seq, 'data-kind': e.kind, 'data-turn': e.turnId }, stamp(e.time), ...kids));
    const part = (c, cls, tag) => c.el.querySelector(':scope > .' + cls) || c.el.appendChild(h(tag || 'div', { class: cls }));
    function card(callId, tool, e) {
      let c = calls.get(callId);
      if (c) return c;
      const el = h('li', { class: 'ev call', 'data-call-id': callId, 'data-seq': e.seq, 'data-turn': e.turnId },
        h('div', { class: 'call-head' }, stamp(e.time), h('strong', { class: 'call-tool' }, tool), ' ', h('code', { class: 'call-id' }, callId),
          e.turnId ? [' · turn ', h('code', { class: 'call-turn' }, e.turnId)] : null));
      c = { el, hasInput: false };
      calls.set(callId, c);
      put(el);
      return c;
    }
    function input(c, v, text) {
      if (c.hasInput || (v === undefined && !text)) return;
      c.hasInput = true;
      c.el.insertBefore(h('div', { class: 'call-input' }, h('span', { class: 'mute' }, 'input'), h('pre', {}, v === undefined ? text : pretty(v))), c.el.children[1] || null);
    }
    function resolved(c, d) {
      const box = part(c, 'approval');
      box.className = 'approval resolved ' + d.status;
      const dec = box.querySelector('.decide'), old = box.querySelector('.approval-decision');
      if (dec) dec.remove();
      const edits = d.changes || (d.originalInput !== undefined ? diffOf(d.originalInput, d.input) : null);
      const line = h('div', { class: 'approval-decision' }, 'Decision: ', decision(d), changes(edits));
      if (old) old.replaceWith(line); else box.appendChild(line);
      if (d.quorum) voteLine(c, d.approvals && d.approvals.length !== undefined ? d.approvals.length : d.approvals, d.quorum);
    }
    // voteLine shows on a call's card how many approved of how many.
    function voteLine(c, n, quorum, by) {
      const box = part(c, 'approval'), old = box.querySelector('.approval-votes'), line = votes(n, quorum, by);
      if (old) old.replaceWith(line); else box.insertBefore(line, box.querySelector('.decide'));
    }
    // turnUsage is a turn's tokens and cost, under its end (a direct call's
    // turn has none); the session's total is read again.
    function turnUsage(d) {
      if (!d.usage) return null;
      respend();
      return h('div', { class: 'turn-usage usage' + (d.usage.costMicroUsd == null ? ' no-price' : '') }, usageText(d.usage));
    }
    // reasoning is a block of the model's reasoning: a <details>, closed,
    // its summary saying how long it is.
    function reasoning(e) {
      const sum = h('summary', {}, 'thinking…'), text = document.createTextNode(''), pre = h('pre', { class: 'reasoning-text' }, text);
      item('ev-reasoning', e, h('details', { class: 'reasoning' }, sum, pre));
      const chars = () => txt(sum, 'thinking… (' + count([...text.data].length) + ' chars)');
      return {
        add(t) { text.appendData(t); chars(); },
        done(d) {
          if (d.text) { text.data = d.text; chars(); } else if (d.redacted) { txt(sum, 'thinking… (redacted)'); text.data = 'The provider sent this reasoning encrypted.'; }
        },
      };
    }
    const render = {
      'session.created': (e, d) => item('ev-note', e, 'session created on ', d.channel, ' (', d.mode, ') by ', d.principal),
      'turn.started': (e, d) => {
        setState(e.turnId);
        item('ev-turn', e, 'turn ', h('code', {}, e.turnId), d.tool ? ' · direct call of ' + d.tool : d.kind === 'compact' ? ' · compaction' : ' · model turn');
      },
      'message.delta': (e, d) => {
        let b = deltas.get(e.turnId);
        if (!b) {
          b = document.createTextNode('');
          deltas.set(e.turnId, b);
          item('assistant', e, h('div', { class: 'role' }, 'assistant'), h('div', { class: 'msg assistant streaming' }, b));
        }
        b.appendData(d.text);
      },
      'message': (e, d) => {
        thinking.delete(e.turnId);
        const b = d.role === 'assistant' && deltas.get(e.turnId);
        if (b) {
          b.data = d.text;
          b.parentNode.classList.remove('streaming');
          deltas.delete(e.turnId);
          return;
        }
        item(d.role === 'user' ? 'user' : 'assistant', e, h('div', { class: 'role' }, d.role), h('div', { class: 'msg ' + (d.role === 'user' ? 'user' : 'assistant') }, d.text));
      },
      'actions.requested': (e, d) => {
        deltas.delete(e.turnId); thinking.delete(e.turnId);
        for (const a of d.actions || []) {
          const c = card(a.callId, a.tool, e);
          // A harness's own call says what it does: its title, kind and files.
          if (a.title && !c.hasTitle) { c.hasTitle = true; c.el.insertBefore(h('div', { class: 'call-title' }, a.kind ? h('span', { class: 'mute' }, a.kind + ' ') : null, a.title, a.locations ? h('span', { class: 'mute' }, ' · ' + a.locations.join(', ')) : null), c.el.children[1] || null); }
          input(c, a.input, a.inputText);
        }
      },
      'action.approval_requested': (e, d) => {
        const c = card(d.callId, d.tool, e);
        input(c, d.input);
        const box = part(c, 'approval');
        if (box.childNodes.length) return;
        add(box, ['approval requested by ', h('span', { class: 'requested-by' }, d.requestedBy), ' · expires ', h('time', { class: 'expires', datetime: d.expiresAt }, when(d.expiresAt)),
          decider('/session/' + enc(id) + '/approvals/' + enc(d.callId), a => resolved(c, a), d.input,
            a => voteLine(c, a.approvals.length, a.quorum, a.approvals.map(v => v.by)))]);
      },
      'action.approval_resolved': (e, d) => resolved(card(d.callId, d.tool, e), d),
      'action.approval_voted': (e, d) => {
        const c = card(d.callId, d.tool, e);
        voteLine(c, d.approvals, d.quorum, [d.by]);
        const box = part(c, 'approval'), old = box.querySelector('.approval-changes');
        if (d.changes) { const line = changes(d.changes); if (old) old.replaceWith(line); else box.appendChild(line); }
      },
      'action.progress': (e, d) => {
        const p = part(card(d.callId, d.tool, e), 'call-progress');
        p.replaceChildren(d.total ? h('progress', { max: d.total, value: d.done }) : null, ' ', d.done + (d.total ? ' / ' + d.total : ''), d.message ? ' · ' + d.message : '');
      },
      'action.output': (e, d) => {
        const p = part(card(d.callId, d.tool, e), 'call-output', 'pre');
        p.appendChild(document.createTextNode(d.text + (d.truncated ? '\n[output truncated]' : '')));
      },
      'action.result': (e, d) => {
        const c = card(d.callId, d.tool, e);
        c.el.classList.toggle('is-error', !!d.isError);
        const prog = c.el.querySelector(':scope > .call-progress');
        if (prog) prog.remove();
        part(c, 'call-result').replaceChildren(
          h('div', { class: d.isError ? 'fail' : 'pass' }, d.isError ? 'isError: true' : 'isError: false', ' · ', h('span', { class: 'duration' }, d.durationMs + ' ms'), d.direct ? ' · direct' : '', d.stubbed ? ' · stubbed (an eval stub answered; the tool did not run)' : '', e.turnId ? [' · turn ', h('code', {}, e.turnId)] : null),
          h('pre', {}, pretty(d.result)));
        part(c, 'call-result').classList.toggle('is-error', !!d.isError);
      },
      'artifact.created': (e, d) => item('ev-note ev-artifact', e, 'artifact ',
        h('a', { class: 'artifact-link', href: API + '/session/' + enc(id) + '/artifacts/' + d.name.split('/').map(enc).join('/') }, d.name),
        ' (', d.contentType, ', ', d.size, ' bytes)'),
      'turn.completed': (e, d) => {
        setState('');
        item('ev-turn completed', e, 'turn completed', d.steps != null ? ' in ' + d.steps + (d.steps === 1 ? ' step' : ' steps') : '', turnUsage(d));
      },
      'turn.failed': (e, d) => {
        setState('');
        item('ev-turn failed', e, 'turn failed', d.code ? [' ', h('code', { class: 'fail-code', title: 'the failure code' }, d.code)] : null, ': ',
          h('span', { class: 'fail-reason' }, d.reason), turnUsage(d));
      },
      // The model's reasoning, folded: what it thought is not the answer.
      'reasoning.delta': (e, d) => { let r = thinking.get(e.turnId); if (!r) thinking.set(e.turnId, r = reasoning(e)); r.add(d.text); },
      'reasoning': (e, d) => { const r = thinking.get(e.turnId) || reasoning(e); thinking.delete(e.turnId); r.done(d); },
      'context.cleared': (e, d) => item('ev-note ev-context', e, '⇤ context: ', d.results, ' old result(s) cleared, ',
        count(d.tokensBefore), ' → ', count(d.tokensAfter), ' tokens'),
      'context.compacted': (e, d) => {
        const it = item('ev-note ev-context', e, '⇤ context compacted (', d.trigger, '): ', count(d.tokensBefore), ' → ', count(d.tokensAfter),
          ' tokens, through event ', d.throughSeq);
        it.append(h('details', { class: 'summary' }, h('summary', {}, 'summary'), h('div', { class: 'summary-text' }, d.summary)));
      },
      'plan': (e, d) => item('ev-note ev-plan', e, h('div', {}, 'plan'), h('ol', { class: 'plan' }, ...(d.entries || []).map(x => h('li', { class: 'plan-' + x.status }, x.status === 'completed' ? '● ' : x.status === 'in_progress' ? '◐ ' : '○ ', x.content)))),
      'harness.session': (e, d) => item('ev-note', e, '▸ ', d.runtime, d.agent ? ' (' + d.agent + ')' : '', ': ', d.loaded ? 'continued session ' : d.fromHistory ? 'new session, from the history ' : 'new session ', d.sessionId),
      'turn.resumed': (e, d) => item('ev-note ev-retry', e, '↻ turn resumed after its host died, attempt ', d.attempt, d.from ? ' (it ran on ' + d.from + ')' : ''),
      'model.retry': (e, d) => item('ev-note ev-retry', e, '↻ model call retry ', d.attempt, ' in ', seconds(d.waitMs),
        ' (', h('code', { class: 'retry-code' }, d.code), d.status ? ', HTTP ' + d.status : '', d.message ? ': ' + d.message : '', ')'),
    };
    function onEvent(ev) {
      let e;
      try { e = JSON.parse(ev.data); } catch (_) { return; }
      if (e.seq <= last) return;
      last = e.seq;
      const d = e.data || {};
      const f = render[e.kind];
      if (f) f(e, d); else item('ev-note', e, e.kind, ' ', h('code', {}, JSON.stringify(d)));
      keepEnd();
    }
    function open() {
      es = new EventSource(API + '/session/' + enc(id) + '/events' + (last ? '?after=' + last : ''));
      for (const k of KINDS) es.addEventListener(k, onEvent);
      es.onopen = () => { txt(live, 'live').className = 'stream live'; };
      es.onerror = () => {
        if (es.readyState !== EventSource.CLOSED) return void (txt(live, 'reconnecting').className = 'stream');
        txt(live, 'disconnected').className = 'stream';
        api('GET', '/session/' + enc(id)).then(res => { // a 401 goes to the sign-in page
          if (res.status === 200 && root.isConnected) setTimeout(() => root.isConnected && open(), 3000);
          else if (res.status !== 200) txt(err, errText(res));
        });
      };
    }
    open();
    onLeave(() => es.close());
  }

  // ---- Approvals ----
  function approvalsView() {
    const list = h('div', { id: 'approvals-list' });
    const decided = h('div', { id: 'approvals-decided' });
    const status = h('p', { id: 'approvals-status', class: 'mute' });
    const decidedHead = h('h2', { hidden: true }, 'Decided since this page opened');
    const root = view('Approvals', 'approvals-view', status, list, decidedHead, decided);
    const cards = new Map(), decidedIds = new Set();
    function done(el, a) {
      cards.delete(a.callId);
      decidedIds.add(a.callId);
      const dec = el.querySelector('.decide');
      if (!dec) return;
      dec.remove();
      el.classList.add('resolved', a.status);
      add(el, [h('div', { class: 'approval-decision' }, 'Decision: ', decision(a), a.originalInput !== undefined ? changes(diffOf(a.originalInput, a.input)) : null)]);
      decided.prepend(el);
      decidedHead.hidden = false;
    }
    function cardOf(a) {
      const el = h('div', { class: 'card approval-item', 'data-call-id': a.callId },
        h('div', { class: 'row' }, h('strong', { class: 'approval-tool' }, a.tool), h('code', { class: 'call-id' }, a.callId),
          a.sessionId ? ['session ', sessionLink(a.sessionId)] : h('span', { class: 'mute' }, 'direct call')),
        h('div', { class: 'mute' }, 'requested by ', a.requestedBy, ' at ', when(a.requestedAt), ' · expires ', h('time', { class: 'expires', datetime: a.expiresAt }, when(a.expiresAt))),
        h('pre', { class: 'approval-input' }, pretty(a.input)),
        a.quorum ? votes((a.approvals || []).length, a.quorum, (a.approvals || []).map(v => v.by)) : null,
        decider((a.sessionId ? '/session/' + enc(a.sessionId) : '') + '/approvals/' + enc(a.callId), d => done(el, d), a.input,
          d => { const old = el.querySelector('.approval-votes'), line = votes(d.approvals.length, d.quorum, d.approvals.map(v => v.by)); if (old) old.replaceWith(line); else el.insertBefore(line, el.querySelector('.decide')); }));
      return el;
    }
    async function gone(id, el) { // decided elsewhere, or expired
      const res = await api('GET', '/calls/' + enc(id));
      const b = res.body || {};
      done(el, b.approval || { callId: id, status: b.status || 'decided' });
    }
    async function poll() {
      const res = await api('GET', '/approvals?status=pending&limit=1000');
      if (!root.isConnected) return;
      if (res.status !== 200) return txt(status, errText(res));
      const seen = new Set();
      for (const a of res.body.approvals) {
        seen.add(a.callId);
        if (!cards.has(a.callId) && !decidedIds.has(a.callId)) { const el = cardOf(a); cards.set(a.callId, el); list.append(el); }
      }
      for (const [id, el] of cards) if (!seen.has(id)) { cards.delete(id); gone(id, el); }
      txt(status, cards.size ? cards.size + ' waiting' : 'Nothing waits for a decision.');
      badge(cards.size);
    }
    poll();
    every(3000, poll);
  }
  const badgeEl = document.getElementById('approvals-count');
  function badge(n, more) { txt(badgeEl, n + (more ? '+' : '')); badgeEl.hidden = !n; }
  async function pollBadge() {
    const res = await api('GET', '/approvals?status=pending&limit=100');
    if (res.status === 200) badge(res.body.approvals.length, !!res.body.next);
  }

  // ---- Tools ----
  async function toolsView() {
    const list = h('div', { id: 'tools-list' });
    const root = view('Tools', 'tools-view', list);
    const res = await api('GET', '/tools');
    if (!root.isConnected) return;
    if (res.status !== 200) return list.append(h('p', { class: 'error' }, errText(res)));
    for (const t of res.body.tools) {
      list.append(h('div', { class: 'card tool', 'data-tool': t.name },
        h('div', { class: 'row' }, h('a', { href: '#/tools/' + enc(t.name), class: 'tool-link' }, h('strong', {}, t.name)),
          h('span', { class: 'mute' }, t.execution + ' tool · approval ' + t.approval)),
        h('div', { class: 'tool-description' }, t.description)));
    }
  }

  // The form generator: each field of a JSON Schema becomes an input, and
  // read(path) returns its value (undefined: left out) and notes its path
  // (input.items[0].name, as the API's violations say) on its element.
  const ident = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const seg = k => ident.test(k) ? '.' + k : '[' + JSON.stringify(k) + ']';
  class Invalid extends Error { constructor(path, msg) { super(msg); this.path = path; } }
  function norm(s, root) {
    for (let i = 0; s && typeof s === 'object' && i < 20; i++) {
      if (typeof s.$ref === 'string') {
        if (!s.$ref.startsWith('#')) return null;
        let t = root;
        for (const p of s.$ref.slice(1).split('/').slice(1)) t = t == null ? t : t[decodeURIComponent(p).replace(/~1/g, '/').replace(/~0/g, '~')];
        if (!t || typeof t !== 'object') return null;
        const rest = Object.assign({}, s);
        delete rest.$ref;
        s = Object.assign({}, t, rest);
        continue;
      }
      const alts = s.anyOf || s.oneOf;
      if (Array.isArray(alts)) {
        const real = alts.filter(a => !(a && a.type === 'null'));
        if (real.length !== 1) return s;
        const rest = Object.assign({}, s);
        delete rest.anyOf; delete rest.oneOf;
        s = Object.assign({}, real[0], rest, real[0].$ref ? { $ref: real[0].$ref } : {});
        continue;
      }
      if (Array.isArray(s.allOf)) {
        const m = Object.assign({}, s, { properties: Object.assign({}, s.properties), required: [].concat(s.required || []) });
        delete m.allOf;
        for (const part of s.allOf) {
          const p = norm(part, root);
          if (!p) return null;
          Object.assign(m.properties, p.properties);
          m.required.push(...(p.required || []));
          if (p.type && !m.type) m.type = p.type;
        }
        if (!Object.keys(m.properties).length) delete m.properties;
        s = m;
        continue;
      }
      return s;
    }
    return s;
  }
  function kindOf(s) {
    if (!s || typeof s !== 'object') return 'raw';
    if (Array.isArray(s.enum) && s.enum.length) return 'enum';
    if ('const' in s) return 'const';
    let t = s.type;
    if (Array.isArray(t)) { t = t.filter(x => x !== 'null'); t = t.length === 1 ? t[0] : null; }
    if (!t && s.properties) t = 'object';
    if (t === 'object') return (s.properties || s.additionalProperties === false) && !s.anyOf && !s.oneOf ? 'object' : 'raw';
    if (t === 'array') return s.items && typeof s.items === 'object' && !Array.isArray(s.items) && !s.prefixItems ? 'array' : 'raw';
    return ['string', 'number', 'integer', 'boolean'].includes(t) && !s.anyOf && !s.oneOf ? t : 'raw';
  }
  function num(s, v, step) {
    const el = h('input', { type: 'number', step, min: s.minimum, max: s.maximum, value: v == null ? '' : String(v) });
    return { input: el, blank: () => el.value.trim() === '', read: () => el.value.trim() === '' ? undefined : Number(el.value) };
  }
  const makers = {
    string(s, req, v) {
      const long = (s.maxLength || 0) > 200 || s.format === 'textarea';
      const el = h(long ? 'textarea' : 'input', { type: long ? null : 'text', rows: long ? 4 : null, placeholder: s.format || s.pattern || null, value: v == null ? '' : String(v) });
      return { input: el, blank: () => el.value === '', read: () => el.value === '' && !req ? undefined : el.value };
    },
    number(s, req, v) { return num(s, v, 'any'); },
    integer(s, req, v) { return num(s, v, '1'); },
    boolean(s, req, v) {
      const el = h('input', { type: 'checkbox', checked: !!v });
      return { input: el, check: true, blank: () => !el.checked, read: () => !req && el.checked === !!s.default ? undefined : el.checked };
    },
    enum(s, req, v) {
      const el = h('select', {}, h('option', { value: '' }, req ? '— choose —' : '—'),
        s.enum.map((x, i) => h('option', { value: String(i), selected: JSON.stringify(x) === JSON.stringify(v) }, typeof x === 'string' ? x : JSON.stringify(x))));
      return { input: el, blank: () => el.value === '', read: () => el.value === '' ? undefined : s.enum[+el.value] };
    },
    const(s) { return { input: h('code', {}, JSON.stringify(s.const)), blank: () => true, read: () => s.const }; },
    raw(s, req, v) {
      const el = h('textarea', { class: 'json', rows: 3, placeholder: 'JSON', value: v === undefined ? '' : pretty(v) });
      return {
        input: el, blank: () => el.value.trim() === '', read(p) {
          if (el.value.trim() === '') return undefined;
          try { return JSON.parse(el.value); } catch (err) { throw new Invalid(p, 'is not valid JSON: ' + err.message); }
        }
      };
    },
    object(s, req, v, root, depth) {
      const kids = Object.entries(s.properties || {}).map(([k, sub]) => [k, field(sub, root, k, (s.required || []).includes(k), v && typeof v === 'object' ? v[k] : undefined, depth + 1)]);
      const box = h('div', { class: 'fields' }, kids.map(([, f]) => f.el));
      const blank = () => kids.every(([, f]) => f.blank());
      return {
        input: box, blank, read(p) {
          const o = {};
          for (const [k, f] of kids) { const x = f.read(p + seg(k)); if (x !== undefined) o[k] = x; }
          return !req && depth > 0 && blank() ? undefined : o;
        }
      };
    },
    array(s, req, v, root, depth, wrap) {
      const items = [];
      const list = h('div', { class: 'items' });
      const addItem = val => {
        const f = field(s.items, root, null, true, val, depth + 1);
        const row = h('div', { class: 'item' }, f.el, h('button', {
          type: 'button', class: 'remove-item', title: 'remove', onclick: () => {
            items.splice(items.indexOf(f), 1); row.remove(); renumber();
          }
        }, '−'));
        items.push(f); list.append(row);
      };
      const renumber = () => { try { me.read(wrap.dataset.path); } catch (_) { /* a raw item's JSON: reported on submit */ } };
      (Array.isArray(v) ? v : []).forEach(addItem);
      const me = {
        input: h('div', {}, list, h('button', { type: 'button', class: 'add-item', onclick: () => { addItem(undefined); renumber(); } }, '+ add')),
        blank: () => !items.length,
        read(p) {
          const out = items.map((f, i) => { const x = f.read(p + '[' + i + ']'); return x === undefined ? null : x; });
          return !items.length && !req ? undefined : out;
        }
      };
      return me;
    },
  };
  function field(s0, root, name, req, v, depth) {
    const s = norm(s0, root) || {};
    const k = depth > 8 ? 'raw' : kindOf(s);
    const wrap = h(k === 'object' && name != null ? 'fieldset' : 'div', { class: 'field field-' + k });
    if (v === undefined && 'default' in s) v = s.default;
    const f = makers[k](s, req, v, root, depth, wrap);
    const violation = h('div', { class: 'violation' });
    const title = name == null ? null : [name, req ? h('span', { class: 'req', title: 'required' }, '*') : null];
    if (k === 'object' && name != null) add(wrap, [h('legend', {}, title), f.input]);
    else if (f.check) add(wrap, [h('label', {}, f.input, title)]);
    else add(wrap, [title && h('label', {}, title), f.input]);
    add(wrap, [s.description ? h('small', { class: 'hint' }, s.description) : null, violation]);
    wrap.violation = violation;
    return { el: wrap, blank: f.blank, read(p) { wrap.dataset.path = p; return f.read(p); } };
  }
  // showViolations puts each violation next to its field (or the nearest
  // field above it), the rest in general; scope null: all in general.
  function showViolations(scope, general, vs) {
    for (const e of document.querySelectorAll('.violation')) e.replaceChildren();
    general.replaceChildren();
    for (const v of vs) {
      let p = scope ? v.path : '', el = null;
      while (p && !(el = scope.querySelector('[data-path="' + CSS.escape(p) + '"]'))) {
        const m = p.match(/^(.*?)(\.[A-Za-z_$][A-Za-z0-9_$]*|\[[^\]]*\])$/);
        p = m ? m[1] : '';
      }
      const line = h('div', { class: 'violation-item', 'data-violation-path': v.path }, p === v.path ? v.message : v.path + ': ' + v.message);
      if (el && el.violation) el.violation.append(line); else general.append(h('li', {}, line));
    }
  }

  async function toolView(name) {
    const root = view('Tool ' + name, 'tool-view');
    const res = await api('GET', '/tools');
    if (!root.isConnected) return;
    const t = res.status === 200 && res.body.tools.find(x => x.name === name);
    if (!t) return root.append(h('p', { class: 'error' }, res.status === 200 ? 'No tool ' + name : errText(res)));
    const schema = t.inputSchema || {};
    add(root, [h('p', { class: 'mute' }, t.execution + ' tool · approval ' + t.approval), h('div', { class: 'card tool-description' }, t.description),
      h('details', {}, h('summary', {}, 'Input schema'), h('pre', { id: 'tool-schema' }, pretty(schema))),
      t.outputSchema ? h('details', {}, h('summary', {}, 'Output schema'), h('pre', {}, pretty(t.outputSchema))) : null]);
    if (t.execution !== 'server') return root.append(h('p', { class: 'mute' }, 'An agent tool runs only inside a model turn: it cannot be called from here.'));
    const generated = kindOf(norm(schema, schema)) === 'object';
    const fields = h('div', { id: 'tool-fields' });
    const raw = h('textarea', { id: 'tool-raw', class: 'json', rows: 10, hidden: generated, value: '{}' });
    const toggle = h('input', { type: 'checkbox', id: 'tool-raw-toggle', checked: !generated, disabled: !generated });
    const session = h('input', { type: 'text', id: 'tool-session', placeholder: 'session id (optional)' });
    const general = h('ul', { id: 'tool-violations', class: 'error' });
    const status = h('p', { id: 'tool-status' });
    const outcome = h('pre', { id: 'tool-outcome', hidden: true });
    const later = h('div', { id: 'tool-call-status' });
    const form = h('form', { id: 'tool-form', class: 'card', novalidate: true }, fields, raw,
      h('div', { class: 'row' }, h('label', {}, toggle, ' edit as JSON')), h('div', { class: 'row' }, h('label', { for: 'tool-session' }, 'Run in session'), session),
      general, h('button', { type: 'submit', id: 'tool-submit' }, 'Call ' + name));
    root.append(form, status, outcome, later);
    let top = null;
    const build = v => { top = field(schema, schema, null, true, v, 0); fields.replaceChildren(top.el); top.read('input'); };
    if (generated) build(undefined);
    function value() {
      if (toggle.checked) {
        try { return JSON.parse(raw.value || '{}'); } catch (err) { throw new Invalid('input', 'is not valid JSON: ' + err.message); }
      }
      return top.read('input');
    }
    toggle.addEventListener('change', () => {
      general.replaceChildren();
      if (toggle.checked) {
        try { raw.value = pretty(top.read('input')); } catch (_) { /* keep the text */ }
      } else {
        try { build(JSON.parse(raw.value || '{}')); } catch (err) { toggle.checked = true; return showViolations(null, general, [{ path: 'input', message: 'is not valid JSON: ' + err.message }]); }
      }
      raw.hidden = !toggle.checked;
      fields.hidden = toggle.checked;
    });
    let polling = null;
    onLeave(() => clearInterval(polling));
    form.addEventListener('submit', async ev => {
      ev.preventDefault();
      clearInterval(polling);
      later.replaceChildren();
      let input;
      try { input = value(); } catch (err) {
        if (!(err instanceof Invalid)) throw err;
        return showViolations(toggle.checked ? null : fields, general, [{ path: err.path, message: err.message }]);
      }
      showViolations(null, general, []);
      const body = { input };
      if (session.value.trim()) body.sessionId = session.value.trim();
      const btn = form.querySelector('#tool-submit');
      btn.disabled = true;
      txt(status, 'calling…');
      const r = await api('POST', '/tools/' + enc(name), body);
      btn.disabled = false;
      const b = r.body || {};
      txt(status, 'HTTP ' + r.status + (b.ok ? (b.status ? ' · ' + b.status : ' · isError: ' + b.isError) : b.error ? ' · ' + b.error.code : '')).className = b.ok && !b.isError ? 'pass' : 'fail';
      outcome.hidden = false;
      txt(outcome, r.body ? indent(r.text) : r.text);
      if (b.error && b.error.code === 'invalid_input') showViolations(toggle.checked ? null : fields, general, b.error.violations || []);
      if (r.status === 202 && b.callId) {
        add(later, [h('p', {}, 'Waiting for a decision: see ', h('a', { href: '#/approvals' }, 'Approvals'), '.')]);
        polling = setInterval(async () => {
          const c = await api('GET', '/calls/' + enc(b.callId));
          if (c.status !== 200 || c.body.toolName !== undefined || !root.isConnected) {
            clearInterval(polling);
            later.replaceChildren(h('p', {}, 'GET /calls/' + b.callId + ':'), h('pre', { id: 'tool-call-outcome' }, c.body ? indent(c.text) : c.text));
          }
        }, 2000);
      }
    });
  }

  // ---- Evals ----
  const pct = x => Math.round((x || 0) * 100) + '%';
  const caseName = c => (c.case && c.case.name) || 'case-' + c.index;
  function checkText(k) {
    if (k.called) return 'called ' + k.called + (k.args ? ' with ' + JSON.stringify(k.args) : '') + (k.result !== undefined ? ' returning ' + JSON.stringify(k.result) : '');
    if (k.notCalled) return 'did not call ' + k.notCalled;
    if (k.contains) return 'answer contains ' + JSON.stringify(k.contains);
    if (k.matches) return 'answer matches /' + k.matches + '/';
    if (k.maxSteps) return 'at most ' + k.maxSteps + ' steps';
    if (k.noError) return 'no error';
    if (k.stub) return 'every call of ' + k.stub + ' matched a stub';
    return JSON.stringify(k);
  }
  const passMark = c => h('span', { class: c.pass ? 'pass' : 'fail' }, c.pass ? '✓ pass' : '✗ fail');
  async function evalsView() {
    const rows = h('tbody', { id: 'evals-list' });
    const err = h('p', { id: 'evals-error', class: 'error' });
    const before = h('select', { id: 'compare-before' }), after = h('select', { id: 'compare-after' });
    const go = h('button', { type: 'button', id: 'compare-go' }, 'Compare');
    go.addEventListener('click', () => { if (before.value && after.value) location.hash = '#/evals/' + enc(before.value) + '/vs/' + enc(after.value); });
    const root = view('Evals', 'evals-view', err, h('div', { class: 'row card' }, 'Compare ', before, ' (before) with ', after, ' (after) ', go),
      h('table', { class: 'list' }, h('thead', {}, h('tr', {}, ['Batch', 'Name', 'Status', 'Score', 'Passed', 'Tokens', 'Cost', 'Created'].map(t => h('th', {}, t)))), rows));
    const res = await api('GET', '/evals?limit=200');
    if (!root.isConnected) return;
    if (res.status !== 200) return txt(err, errText(res));
    const bs = res.body.batches || [];
    for (const b of bs) {
      rows.append(h('tr', { class: 'eval', 'data-id': b.id }, h('td', {}, h('a', { href: '#/evals/' + enc(b.id), class: 'eval-link' }, b.id)), h('td', {}, b.name),
        h('td', { class: 'status-' + b.status }, b.status), h('td', {}, pct(b.score)), h('td', {}, b.passed + ' / ' + b.total),
        tokensCell(b.usage), costCell(b.usage), h('td', {}, when(b.createdAt))));
      const label = b.name + ' · ' + when(b.createdAt) + ' · ' + b.id;
      before.append(h('option', { value: b.id }, label));
      after.append(h('option', { value: b.id }, label));
    }
    if (bs.length > 1) before.selectedIndex = 1;
  }
  async function evalView(id) {
    const summary = h('div', { id: 'eval-summary', class: 'card' });
    const rows = h('tbody', { id: 'eval-cases' });
    const root = view('Eval batch', 'eval-view', summary,
      h('table', { class: 'list' }, h('thead', {}, h('tr', {}, ['#', 'Case', 'Status', 'Score', 'Result', 'Checks', 'Tokens', 'Cost', 'Session'].map(t => h('th', {}, t)))), rows));
    async function load() {
      const res = await api('GET', '/evals/' + enc(id));
      if (!root.isConnected) return;
      if (res.status !== 200) return summary.replaceChildren(h('p', { class: 'error' }, errText(res)));
      const b = res.body;
      summary.replaceChildren(h('strong', {}, b.name), ' · ', h('code', {}, b.id), ' · ', h('span', { class: 'status-' + b.status }, b.status),
        ' · score ', pct(b.score), ' · passed ', b.passed, ' / ', b.total, ' · created ', when(b.createdAt),
        b.usage ? h('div', { id: 'eval-usage', class: 'usage' }, 'Σ batch: ', usageText(b.usage)) : null);
      rows.replaceChildren(...(b.cases || []).map(c => h('tr', { class: 'case ' + (c.pass ? 'pass-row' : 'fail-row'), 'data-case': caseName(c) },
        h('td', {}, c.index), h('td', {}, caseName(c)), h('td', { class: 'status-' + c.status }, c.status), h('td', {}, pct(c.score)), h('td', {}, passMark(c)),
        h('td', {}, h('ul', { class: 'checks' }, (c.checks || []).map(k => h('li', { class: 'check ' + (k.pass ? 'pass' : 'fail') }, k.pass ? '✓ ' : '✗ ', checkText(k.check || {}),
          k.detail ? h('span', { class: 'mute' }, ' — ', k.detail) : null))), c.error ? h('div', { class: 'fail case-error' }, c.error) : null),
        tokensCell(c.usage), costCell(c.usage), h('td', {}, c.sessionId ? sessionLink(c.sessionId) : ''))));
      if (b.status === 'queued' || b.status === 'running') setTimeout(load, 3000);
    }
    load();
  }
  // deltas says how y (after) differs from x (before), a case's or a
  // batch's: [text, class] for the score (in points), the tokens and the
  // cost — better (a higher score, fewer tokens, less money), worse or
  // same; '' when one is absent, — when a cost is null.
  function deltas(x, y) {
    const sign = (n, f) => n > 0 ? '+' + f(n) : n < 0 ? '−' + f(-n) : '±' + f(0);
    const cls = (n, good) => n === 0 ? 'same' : (n > 0) === good ? 'better' : 'worse';
    if (!x || !y) return { score: ['', ''], tokens: ['', ''], cost: ['', ''] };
    const ds = Math.round((y.score || 0) * 100) - Math.round((x.score || 0) * 100);
    const out = { score: [sign(ds, n => n + ' pts'), cls(ds, true)], tokens: ['', ''], cost: ['', ''] };
    if (x.usage && y.usage) {
      const dt = allTokens(y.usage) - allTokens(x.usage);
      out.tokens = [sign(dt, count), cls(dt, false)];
      const xc = x.usage.costMicroUsd, yc = y.usage.costMicroUsd;
      out.cost = xc == null || yc == null ? ['—', 'no-price'] : [sign(yc - xc, money), cls(yc - xc, false)];
    }
    return out;
  }
  async function compareView(a, b) {
    const summary = h('p', { id: 'compare-summary' });
    const rows = h('tbody', { id: 'compare-cases' });
    const root = view('Compare', 'compare-view', summary,
      h('p', { id: 'compare-deltas', class: 'usage' }),
      h('table', { class: 'list' }, h('thead', {}, h('tr', {}, h('th', {}, 'Case'), h('th', { id: 'compare-before-head' }, 'Before'), h('th', { id: 'compare-after-head' }, 'After'),
        h('th', {}, 'Verdict'), h('th', {}, 'Δ score'), h('th', {}, 'Δ tokens'), h('th', {}, 'Δ cost'))), rows));
    const [ra, rb] = await Promise.all([api('GET', '/evals/' + enc(a)), api('GET', '/evals/' + enc(b))]);
    if (!root.isConnected) return;
    if (ra.status !== 200 || rb.status !== 200) return txt(summary, errText(ra.status !== 200 ? ra : rb)).className = 'error';
    const A = ra.body, B = rb.body;
    const spent = u => u ? ', ' + count(allTokens(u)) + ' tokens, ' + money(u.costMicroUsd) : '';
    add(root.querySelector('#compare-before-head'), [': ', A.name, ' (', pct(A.score), spent(A.usage), ', ', when(A.createdAt), ')']);
    add(root.querySelector('#compare-after-head'), [': ', B.name, ' (', pct(B.score), spent(B.usage), ', ', when(B.createdAt), ')']);
    const byName = new Map();
    for (const c of A.cases || []) byName.set(caseName(c), [c, null]);
    for (const c of B.cases || []) { const p = byName.get(caseName(c)); if (p) p[1] = c; else byName.set(caseName(c), [null, c]); }
    const cell = c => h('td', {}, c ? [passMark(c), ' ', pct(c.score), ' · ', c.status, c.usage ? [' · ', h('span', { class: 'case-cost' }, money(c.usage.costMicroUsd))] : null,
      c.sessionId ? [' · ', sessionLink(c.sessionId)] : null] : h('span', { class: 'mute' }, 'absent'));
    let reg = 0, fixed = 0;
    for (const [name, [x, y]] of byName) {
      const v = x && y ? (x.pass && !y.pass ? 'regression' : !x.pass && y.pass ? 'fixed' : y.pass ? 'pass' : 'still failing') : x ? 'missing' : 'new';
      if (v === 'regression') reg++;
      if (v === 'fixed') fixed++;
      const d = deltas(x, y);
      rows.append(h('tr', { class: 'compare-case ' + v.replace(' ', '-'), 'data-case': name }, h('td', {}, name), cell(x), cell(y), h('td', { class: 'verdict' }, v),
        h('td', { class: 'delta-score ' + d.score[1] }, d.score[0]), h('td', { class: 'delta-tokens ' + d.tokens[1] }, d.tokens[0]), h('td', { class: 'delta-cost ' + d.cost[1] }, d.cost[0])));
    }
    txt(summary, reg + ' regression' + (reg === 1 ? '' : 's') + ', ' + fixed + ' fixed, ' + byName.size + ' cases').className = reg ? 'fail' : 'pass';
    const t = deltas(A, B);
    root.querySelector('#compare-deltas').replaceChildren('After − before: score ', h('span', { id: 'compare-delta-score', class: t.score[1] }, t.score[0]),
      ' · tokens ', h('span', { id: 'compare-delta-tokens', class: t.tokens[1] }, t.tokens[0]), ' · cost ', h('span', { id: 'compare-delta-cost', class: t.cost[1] }, t.cost[0]));
  }

  document.getElementById('signout').addEventListener('click', async () => {
    await fetch(BASE + '/playground/signout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': CSRF } });
    location.assign(SIGNIN);
  });
  window.addEventListener('hashchange', route);
  route();
  pollBadge();
  setInterval(pollBadge, 10000);
})();
