// otelprof report: renders the aggregated call tree embedded by the CLI.
// Hand-written, no library: the page must open offline from one file.
// State lives in location.hash (search, filters, zoom, view, sort), so a
// view can be shared as a link and tests load it directly.
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('report-data').textContent);
  const S = D.strings, G = D.group, NN = D.node.parent.length;
  const par = D.node.parent, nfn = D.node.fn, ROW = 18;
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const fname = (f) => S[D.fn.name[f]];
  const ftype = (f) => S[D.fn.type[f]] || 'unknown';
  const floc = (f) => { const file = S[D.fn.file[f]], line = D.fn.line[f]; return file ? file + (line ? ':' + line : '') : ''; };
  const nsides = D.diff ? 2 : 1;

  // ---- static structure: depth, children (sorted by name), frame types ----
  const depth = new Int32Array(NN), typeMask = new Uint32Array(NN);
  const types = [], typeBit = {};
  for (let f = 0; f < D.fn.name.length; f++) {
    const t = ftype(f);
    if (!(t in typeBit)) { typeBit[t] = types.length < 31 ? 1 << types.length : 0; types.push(t); }
  }
  const nchild = new Int32Array(NN + 1);
  for (let n = 1; n < NN; n++) {
    depth[n] = depth[par[n]] + 1;
    typeMask[n] = typeMask[par[n]] | typeBit[ftype(nfn[n])];
    nchild[par[n]]++;
  }
  const cstart = new Int32Array(NN + 1);
  for (let n = 0; n < NN; n++) cstart[n + 1] = cstart[n] + nchild[n];
  const kids = new Int32Array(Math.max(NN - 1, 0)), fill = cstart.slice(0, NN);
  for (let n = 1; n < NN; n++) kids[fill[par[n]]++] = n;
  for (let n = 0; n < NN; n++) {
    if (nchild[n] > 1) {
      const a = Array.from(kids.subarray(cstart[n], cstart[n + 1]));
      a.sort((x, y) => (fname(nfn[x]) < fname(nfn[y]) ? -1 : fname(nfn[x]) > fname(nfn[y]) ? 1 : 0));
      kids.set(a, cstart[n]);
    }
  }
  // outer[n]: no ancestor runs the same function (a function's total
  // counts each stack once, also under recursion). Iterative DFS.
  const outer = new Uint8Array(NN), onPath = new Int32Array(D.fn.name.length);
  {
    const stack = [0];
    while (stack.length) {
      const n = stack.pop();
      if (n < 0) { onPath[nfn[~n]]--; continue; }
      if (n > 0) { outer[n] = onPath[nfn[n]] === 0 ? 1 : 0; onPath[nfn[n]]++; stack.push(~n); }
      for (let i = cstart[n + 1] - 1; i >= cstart[n]; i--) stack.push(kids[i]);
    }
  }
  let maxDepth = 0;
  for (let n = 0; n < NN; n++) if (depth[n] > maxDepth) maxDepth = depth[n];
  let tmax = 0;
  for (let i = 0; i < G.t.length; i++) if (G.t[i] > tmax) tmax = G.t[i];

  // ---- state in the hash ----
  const st = {};
  const KEYS = ['search', 'thread', 'ftype', 'from', 'to', 'ctx', 'view', 'zoom', 'sort'].concat(D.resKeys.map((k) => 'res.' + k));
  function readHash() {
    for (const k of KEYS) delete st[k];
    const h = location.hash.replace(/^#/, '');
    for (const kv of h.split('&')) {
      if (!kv) continue;
      const i = kv.indexOf('=');
      const k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i)), v = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1));
      if (KEYS.includes(k)) st[k] = v;
    }
  }
  function writeHash() {
    const h = KEYS.filter((k) => st[k] !== undefined && st[k] !== '').map((k) => encodeURIComponent(k) + '=' + encodeURIComponent(st[k])).join('&');
    history.replaceState(null, '', '#' + h);
  }

  // ---- selection: filtered groups -> self and total per node and side ----
  function ctxMatcher(q) {
    if (!q) return null;
    const needle = q.toLowerCase();
    const memo = new Map();
    return (c) => {
      let r = memo.get(c);
      if (r === undefined) { r = S[c].toLowerCase().includes(needle); memo.set(c, r); }
      return r;
    };
  }
  function select() {
    const self = [], tot = [];
    for (let s = 0; s < nsides; s++) { self.push(new Float64Array(NN)); tot.push(new Float64Array(NN)); }
    const thr = st.thread, tb = st.ftype ? typeBit[st.ftype] : 0;
    const from = st.from !== undefined && st.from !== '' ? +st.from : -Infinity;
    const to = st.to !== undefined && st.to !== '' ? +st.to : Infinity;
    const cm = ctxMatcher(st.ctx), bucket = D.bucketSeconds || 1;
    const resOk = D.res.map((r) => D.resKeys.every((k, i) => { const v = st['res.' + k]; return v === undefined || v === '' || S[r[i]] === v; }));
    const thrOk = D.thread.name.map((nm) => !thr || S[nm] === thr);
    for (let i = 0; i < G.leaf.length; i++) {
      if (!thrOk[G.thread[i]] || !resOk[G.res[i]]) continue;
      if (G.t[i] + bucket - 1 < from || G.t[i] > to) continue; // buckets overlapping [from, to]
      if (st.ftype && !(typeMask[G.leaf[i]] & tb)) continue;
      if (cm && !cm(G.ctx[i])) continue;
      self[G.side[i] < nsides ? G.side[i] : 0][G.leaf[i]] += G.w[i];
    }
    for (let s = 0; s < nsides; s++) {
      const a = self[s], t = tot[s];
      for (let n = NN - 1; n >= 0; n--) { t[n] += a[n]; if (n > 0) t[par[n]] += t[n]; }
    }
    return { self, tot };
  }

  function searchRe() {
    if (!st.search) return null;
    try { return new RegExp(st.search, 'i'); } catch (e) { const q = st.search.toLowerCase(); return { test: (s) => s.toLowerCase().includes(q) }; }
  }

  // ---- colors ----
  const HUE = { kernel: 12, native: 38, go: 190, cpython: 215, jvm: 110, v8js: 55, ruby: 350, php: 265, perl: 300, dotnet: 235, beam: 330, rust: 25, luajit: 160 };
  function hashStr(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return h >>> 0; }
  function typeColor(f) {
    const t = ftype(f), hue = HUE[t];
    if (hue === undefined) return 'hsl(0,0%,' + (72 + hashStr(fname(f)) % 12) + '%)';
    return 'hsl(' + hue + ',' + (55 + hashStr(fname(f)) % 20) + '%,' + (62 + hashStr(fname(f)) % 14) + '%)';
  }
  function diffColor(d) { // d: change in share, points
    const k = Math.min(1, Math.abs(d) / 10);
    if (Math.abs(d) < 0.05) return 'hsl(0,0%,88%)';
    return d > 0 ? 'hsl(0,80%,' + (90 - 40 * k) + '%)' : 'hsl(215,80%,' + (90 - 40 * k) + '%)';
  }

  const pct = (x) => (100 * x).toFixed(2);
  const fmt = (x) => (x >= 100 ? Math.round(x).toLocaleString('en') : x >= 1 ? x.toFixed(1) : x.toPrecision(2));
  function span() { // seconds the selection covers, for annualizing
    const sec = D.sides.map((s) => s.seconds || 0);
    const from = st.from ? +st.from : 0, to = st.to ? +st.to + 1 : Infinity;
    return sec.map((s) => (s > 0 ? Math.max(1, Math.min(s, to) - Math.max(0, from)) / s : 1));
  }
  function cost(samples, side, frac) {
    const ch = samples * D.sides[side].coreHoursPerSample / frac;
    return { ch, usd: ch * D.cost.costPerCoreHour, co2: ch * D.cost.co2KgPerCoreHour };
  }

  // ---- rendering ----
  let sel = null;
  const main = nsides - 1; // widths: the only side, or NEW in a diff
  function render() {
    sel = select();
    const tot = sel.tot[main], all = tot[0] || 0, re = searchRe();
    const frac = span();
    // summary
    const parts = [];
    for (let s = 0; s < nsides; s++) {
      const c = cost(sel.tot[s][0], s, frac[s]);
      parts.push((D.diff ? (s ? 'new ' : 'base ') : '') + '<b>' + sel.tot[s][0].toLocaleString('en') + '</b> of ' + D.sides[s].samples.toLocaleString('en') +
        ' samples, ' + fmt(c.ch) + ' core-h/yr, $' + fmt(c.usd) + '/yr, ' + fmt(c.co2) + ' kg CO2/yr');
    }
    const sm = $('summary');
    sm.innerHTML = parts.join(' &middot; ') + (D.bucketSeconds > 1 ? ' &middot; time resolution ' + D.bucketSeconds + ' s' : '') + (D.dropped ? ' &middot; <b>' + D.dropped + ' samples left out (caps)</b>' : '');
    sm.dataset.total = sel.tot[main][0];
    if (D.diff) sm.dataset.baseTotal = sel.tot[0][0];

    // frames
    let zoom = st.zoom ? +st.zoom : 0;
    if (!(zoom > 0 && zoom < NN) || !tot[zoom]) zoom = 0;
    const out = [];
    // the root (depth 0) is not drawn: rows hold depths 1..maxDepth
    const rows = Math.max(maxDepth, 1), flame = st.view !== 'icicle';
    const top = (d) => (flame ? (rows - d) * ROW : (d - 1) * ROW);
    const base = D.diff ? sel.tot[0] : null, ball = D.diff ? sel.tot[0][0] || 0 : 0;
    function frame(n, x, w, cls) {
      const f = nfn[n], name = fname(f);
      let c = cls, color = typeColor(f), extra = '';
      if (re) c += re.test(name) ? ' hit' : ' dim';
      if (D.diff) {
        const d = 100 * ((all ? tot[n] / all : 0) - (ball ? base[n] / ball : 0));
        color = diffColor(d);
        extra = ' data-delta="' + d.toFixed(2) + '"';
      }
      out.push('<div class="fr' + c + '" data-node="' + n + '" data-name="' + esc(name) + '" data-type="' + esc(ftype(f)) + '" data-share="' + pct(all ? tot[n] / all : 0) + '"' + extra +
        ' style="left:' + (100 * x).toFixed(4) + '%;width:' + (100 * w).toFixed(4) + '%;top:' + top(depth[n]) + 'px;background-color:' + color + '">' + esc(name) + '</div>');
    }
    if (all) {
      for (let a = zoom ? par[zoom] : 0; a > 0; a = par[a]) frame(a, 0, 1, ' anc');
      const ztot = tot[zoom], minw = 0.0004;
      const stack = [[zoom, 0]];
      while (stack.length) {
        const [n, x] = stack.pop();
        const w = tot[n] / ztot;
        if (n) frame(n, x, w, '');
        let cx = x;
        for (let i = cstart[n]; i < cstart[n + 1]; i++) {
          const k = kids[i], kw = tot[k] / ztot;
          if (kw >= minw) stack.push([k, cx]);
          cx += kw;
        }
      }
    }
    const fl = $('flame');
    fl.style.height = rows * ROW + 'px';
    fl.innerHTML = out.join('');
    fl.dataset.zoom = zoom;

    // search sum: matching nodes with no matching ancestor, over all nodes
    const sr = $('search-result');
    if (re) {
      const hit = new Uint8Array(NN);
      let sum = 0;
      for (let n = 1; n < NN; n++) {
        const m = re.test(fname(nfn[n]));
        hit[n] = m || hit[par[n]] ? 1 : 0;
        if (m && !hit[par[n]]) sum += tot[n];
      }
      sr.textContent = 'matched ' + sum.toLocaleString('en') + ' samples (' + pct(all ? sum / all : 0) + '%)';
      sr.dataset.samples = sum;
      sr.dataset.share = pct(all ? sum / all : 0);
    } else { sr.textContent = ''; delete sr.dataset.samples; delete sr.dataset.share; }
    renderTop(frac);
  }

  function fnStats(s) {
    const nf = D.fn.name.length, self = new Float64Array(nf), total = new Float64Array(nf);
    const a = sel.self[s], t = sel.tot[s];
    for (let n = 1; n < NN; n++) { self[nfn[n]] += a[n]; if (outer[n]) total[nfn[n]] += t[n]; }
    return { self, total, all: t[0] || 0 };
  }
  function ranks(v) {
    const idx = Array.from(v.keys()).filter((i) => v[i] > 0).sort((x, y) => v[y] - v[x]);
    const r = new Int32Array(v.length); idx.forEach((f, i) => { r[f] = i + 1; }); return r;
  }
  function renderTop(frac) {
    const cur = fnStats(main), b = D.diff ? fnStats(0) : null;
    const nf = D.fn.name.length;
    const cols = [['name', 'function'], ['type', 'type'], ['loc', 'file:line'], ['self', 'self'], ['selfp', 'self %'], ['total', 'total'], ['totalp', 'total %'],
      ['ch', 'core-h/yr'], ['usd', 'cost/yr'], ['co2', 'kg CO2/yr']];
    if (D.diff) cols.push(['bselfp', 'base self %'], ['delta', 'Δ self pts'], ['rank', 'rank (base→new)'], ['rankd', 'rank Δ']);
    const sort = st.sort || (D.diff ? 'delta' : 'self');
    const rNew = ranks(cur.self), rBase = D.diff ? ranks(b.self) : null;
    const share = (st, f) => (st.all ? st.self[f] / st.all : 0);
    const val = {
      name: (f) => fname(f), type: (f) => ftype(f), loc: (f) => floc(f), self: (f) => cur.self[f], selfp: (f) => cur.self[f], total: (f) => cur.total[f],
      totalp: (f) => cur.total[f], ch: (f) => cur.total[f], usd: (f) => cur.total[f], co2: (f) => cur.total[f],
      bselfp: (f) => share(b, f), delta: (f) => Math.abs(share(cur, f) - share(b, f)), rank: (f) => -(rNew[f] || 1e9), rankd: (f) => (rBase[f] || 1e9) - (rNew[f] || 1e9),
    };
    const fns = [];
    for (let f = 0; f < nf; f++) if (cur.total[f] > 0 || (b && b.total[f] > 0)) fns.push(f);
    const v = val[sort] || val.self, textual = sort === 'name' || sort === 'type' || sort === 'loc';
    fns.sort((x, y) => (textual ? (v(x) < v(y) ? -1 : v(x) > v(y) ? 1 : 0) : v(y) - v(x)));
    $('top').tHead.innerHTML = '<tr>' + cols.map(([k, h]) => '<th data-sort="' + k + '"' + (k === sort ? ' class="sorted"' : '') + '>' + h + '</th>').join('') + '</tr>';
    const rows = [];
    for (const f of fns.slice(0, 300)) {
      const c = cost(cur.total[f], main, frac[main]);
      let r = '<tr data-fn="' + esc(fname(f)) + '" data-self-share="' + pct(share(cur, f)) + '"';
      let cells = '<td class="name">' + esc(fname(f)) + '</td><td>' + esc(ftype(f)) + '</td><td class="name">' + esc(floc(f)) + '</td><td>' + cur.self[f] + '</td><td>' + pct(share(cur, f)) +
        '</td><td>' + cur.total[f] + '</td><td>' + pct(cur.all ? cur.total[f] / cur.all : 0) + '</td><td>' + fmt(c.ch) + '</td><td>$' + fmt(c.usd) + '</td><td>' + fmt(c.co2) + '</td>';
      if (D.diff) {
        const d = 100 * (share(cur, f) - share(b, f)), rd = rBase[f] && rNew[f] ? rBase[f] - rNew[f] : null;
        r += ' data-delta="' + d.toFixed(2) + '" data-rank-change="' + (rd === null ? '' : rd) + '"';
        cells += '<td>' + pct(share(b, f)) + '</td><td class="' + (d > 0 ? 'gain' : d < 0 ? 'loss' : '') + '">' + (d > 0 ? '+' : '') + d.toFixed(2) + '</td><td>' + (rBase[f] || '-') + ' → ' + (rNew[f] || '-') +
          '</td><td>' + (rd === null ? (rNew[f] ? 'new' : rBase[f] ? 'gone' : '') : rd > 0 ? '↑' + rd : rd < 0 ? '↓' + -rd : '=') + '</td>';
      }
      rows.push(r + '>' + cells + '</tr>');
    }
    $('top').tBodies[0].innerHTML = rows.join('');
  }

  // ---- controls ----
  function options(sel, values, current) {
    sel.innerHTML = '<option value="">all</option>' + values.map((v) => '<option' + (v === current ? ' selected' : '') + ' value="' + esc(v) + '">' + esc(v || '(none)') + '</option>').join('');
  }
  function uniq(a) { return Array.from(new Set(a)).sort(); }
  function setupControls() {
    $('title').textContent = (D.diff ? 'otelprof diff: ' : 'otelprof report: ') + D.title;
    options($('f-thread'), uniq(D.thread.name.map((n) => S[n])), st.thread);
    options($('f-ftype'), types.slice().sort(), st.ftype);
    const rf = $('res-filters');
    rf.innerHTML = D.resKeys.map((k, i) => {
      const vals = uniq(D.res.map((r) => S[r[i]]));
      return vals.length > 1 || (vals.length === 1 && vals[0]) ? '<label>' + esc(k) + ' <select data-res="' + esc(k) + '"></select></label>' : '';
    }).join('');
    rf.querySelectorAll('select').forEach((s) => { const i = D.resKeys.indexOf(s.dataset.res); options(s, uniq(D.res.map((r) => S[r[i]])), st['res.' + s.dataset.res]); });
    $('f-search').value = st.search || ''; $('f-ctx').value = st.ctx || '';
    $('f-from').value = st.from || ''; $('f-to').value = st.to || ''; $('f-to').placeholder = 'to ' + tmax + ' s';
    $('f-view').value = st.view === 'icicle' ? 'icicle' : 'flame';
    $('legend').innerHTML = D.diff ? '<span style="background:' + diffColor(5) + '">more in NEW</span><span style="background:' + diffColor(-5) + '">less in NEW</span>'
      : types.map((t) => '<span style="background:hsl(' + (HUE[t] === undefined ? '0,0%,80%' : HUE[t] + ',65%,68%') + ')">' + esc(t) + '</span>').join('');
    $('cost-note').textContent = 'cost and CO2 of each function with its callees, annualized: ' + D.cost.wattsPerCore + ' W/core, PUE ' + D.cost.pue + ', ' + D.cost.co2KgPerKwh + ' kg CO2/kWh, $' + D.cost.costPerCoreHour + '/core-hour';
  }
  function onChange() {
    st.search = $('f-search').value; st.thread = $('f-thread').value; st.ftype = $('f-ftype').value; st.ctx = $('f-ctx').value;
    st.from = $('f-from').value; st.to = $('f-to').value; st.view = $('f-view').value === 'icicle' ? 'icicle' : '';
    $('res-filters').querySelectorAll('select').forEach((s) => { st['res.' + s.dataset.res] = s.value; });
    writeHash(); render();
  }
  $('filters').addEventListener('input', onChange);
  $('f-reset').addEventListener('click', () => { location.hash = ''; });
  window.addEventListener('hashchange', () => { readHash(); setupControls(); render(); });
  const fl = $('flame'), tip = $('tip');
  fl.addEventListener('click', (e) => {
    const el = e.target.closest('.fr'); if (!el) return;
    const n = +el.dataset.node; // the zoomed frame again: one level out
    st.zoom = n === +fl.dataset.zoom ? String(par[n] || '') : String(n);
    writeHash(); render();
  });
  fl.addEventListener('mousemove', (e) => {
    const el = e.target.closest('.fr'); if (!el) { tip.hidden = true; return; }
    const n = +el.dataset.node, f = nfn[n], all = sel.tot[main][0] || 1;
    let h = '<b>' + esc(fname(f)) + '</b><br>' + esc(ftype(f)) + (floc(f) ? ' &middot; ' + esc(floc(f)) : '') +
      '<br>total ' + sel.tot[main][n] + ' samples (' + pct(sel.tot[main][n] / all) + '%), self ' + sel.self[main][n] + ' (' + pct(sel.self[main][n] / all) + '%)';
    if (D.diff) h += '<br>base ' + pct(sel.tot[0][n] / (sel.tot[0][0] || 1)) + '% → new ' + pct(sel.tot[main][n] / all) + '% (' + el.dataset.delta + ' pts)';
    tip.innerHTML = h; tip.hidden = false;
    tip.style.left = Math.min(e.clientX + 12, innerWidth - 420) + 'px'; tip.style.top = e.clientY + 14 + 'px';
  });
  fl.addEventListener('mouseleave', () => { tip.hidden = true; });
  $('top').addEventListener('click', (e) => { const th = e.target.closest('th'); if (th) { st.sort = th.dataset.sort; writeHash(); render(); } });
  readHash(); setupControls(); render();
  document.body.dataset.rendered = '1';
  document.body.dataset.renderMs = Math.round(performance.now()); // since navigation: load, parse, first render
})();
