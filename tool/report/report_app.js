/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_app.js — the script of the servprof report page (inlined by
 * `servprof report` after uPlot and the page data; see report.html).
 *
 * Design: the page data (schema in docs/report.md) holds one entry per run
 * ("A", and "B" with --compare): analyze's JSON document (figures, windows,
 * findings, TTFT breakdown) and the series read from profiler.db (already
 * reduced to min/max per time bucket by the C side). This script only lays
 * them out: headline cards, findings, time charts whose x axes are linked
 * (drag to zoom one and every time chart follows; the cursor moves on all),
 * CDFs, the TTFT breakdown and a sortable table of the slowest requests with
 * a phase bar per request. Times are seconds from each run's start, so two
 * runs overlay on one axis. Nothing is fetched: everything is in the file.
 *
 * For tests and benchmarks, window.__servprof holds {ready, renderMs, charts:
 * [{id, title, kind, points}], errors}.
 */
'use strict';
(function () {
  const STATE = window.__servprof = { ready: false, renderMs: null, charts: [], errors: [] };
  window.addEventListener('error', e => STATE.errors.push(String(e.message)));

  const D = JSON.parse(document.getElementById('servprof-data').textContent);
  const RUNS = D.runs;
  const COMPARE = RUNS.length > 1;
  const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#a16207', '#db2777'];
  const PHASES = [
    ['queue_ms', 'queue', '#f59e0b'], ['schedule_ms', 'schedule / other', '#a3a3a3'],
    ['prefill_ms', 'prefill', '#2563eb'], ['first_decode_wait_ms', 'first-decode wait', '#9333ea'],
    ['decode_ms', 'decode', '#16a34a'],
  ];

  /* ------------------------------------------------------------ helpers */
  const $ = id => document.getElementById(id);
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else if (k === 'style') e.style.cssText = v;
      else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }
  function num(v, digits) {
    if (v == null || !isFinite(v)) return '–';
    const a = Math.abs(v);
    if (digits == null) digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
  }
  const pct = v => (v == null || !isFinite(v)) ? '–' : num(v * 100, 1) + ' %';
  const get = (o, path) => path.split('.').reduce((x, k) => (x == null ? undefined : x[k]), o);
  const an = run => run.analyze || null;
  /* Seconds from the run's start (the page's origin, t0_us) for an epoch-ns time. */
  const relS = (run, ns) => (ns / 1e3 - run.db.t0_us) / 1e6;

  /* ------------------------------------------------------- header/cards */
  function header() {
    const parts = RUNS.map(r => `${r.label}: ${r.input}`);
    const a = RUNS[0];
    parts.push(`${num(a.db.duration_s, 1)} s, ${num(a.db.requests || 0, 0)} requests`);
    parts.push(`servprof ${D.servprof}, uPlot ${D.uplot}`);
    $('subtitle').textContent = parts.join(' · ');
    /* The timeline beside a parsed run: trace.pftrace opens in
     * https://ui.perfetto.dev (Open trace file), chrome_tracing.json too. */
    const links = RUNS.filter(r => r.timeline && r.timeline.length);
    if (links.length) {
      const div = document.createElement('div');
      div.className = 'sub';
      div.id = 'timeline-links';
      div.append('Timeline: ');
      links.forEach((r, i) => {
        if (i) div.append(' · ');
        if (RUNS.length > 1) div.append(`${r.label}: `);
        r.timeline.forEach((t, k) => {
          if (k) div.append(', ');
          const a = document.createElement('a');
          a.href = t.href;
          a.textContent = `${t.file} (${num(t.bytes / 1048576, 1)} MiB)`;
          div.append(a);
        });
      });
      div.append(' — open it in https://ui.perfetto.dev');
      $('subtitle').after(div);
    }
  }

  const CARDS = [
    ['requests', 'headline.requests', v => num(v, 0), 'headline.incomplete', v => `${num(v, 0)} cut by the window`],
    ['throughput', 'headline.throughput_rps', v => num(v) + ' <small>req/s</small>',
      'headline.output_tokens_per_s', v => `${num(v)} output tokens/s`],
    ['TTFT P50', 'headline.ttft_ms.p50', v => num(v) + ' <small>ms</small>', 'headline.ttft_ms.p99', v => `P99 ${num(v)} ms`],
    ['TPOT P50', 'headline.tpot_ms.p50', v => num(v) + ' <small>ms</small>', 'headline.tpot_ms.p99', v => `P99 ${num(v)} ms`],
    ['e2e P50', 'headline.e2e_ms.p50', v => num(v) + ' <small>ms</small>', 'headline.e2e_ms.p99', v => `P99 ${num(v)} ms`],
    ['queue wait P99', 'headline.queue_ms.p99', v => num(v) + ' <small>ms</small>', 'headline.queue_ms.p50', v => `P50 ${num(v)} ms`],
    ['batch size (mean)', 'headline.batch_size_mean', v => num(v), 'headline.preemptions', v => `${num(v, 0)} preemptions`],
    ['KV usage peak', 'headline.kv_usage_peak', pct, 'headline.kv_usage_mean', v => `mean ${pct(v)}`],
    ['engine busy', 'headline.busy_frac', pct, 'headline.stalled_frac', v => `stalled ${pct(v)}`],
    ['engine idle', 'headline.idle_frac', pct, null, null],
  ];

  function headline() {
    const sec = $('headline');
    const A = RUNS[0], B = RUNS[1];
    if (!an(A)) {
      sec.append(el('div', { class: 'verdict warn', text: 'analyze\'s figures and findings are not in this page ' +
        '(servprof report said why when it ran); the charts below come straight from profiler.db.' }));
      return;
    }
    const cards = el('div', { class: 'cards', id: 'cards' });
    for (const [k, path, f, bpath, bf] of CARDS) {
      const va = get(an(A), path);
      const card = el('div', { class: 'card' }, el('div', { class: 'k', text: k }));
      const v = el('div', { class: 'v' });
      v.innerHTML = f(va);
      if (B && an(B)) {
        const vb = get(an(B), path);
        const d = (va != null && vb != null && va !== 0) ? (vb - va) / Math.abs(va) : null;
        v.innerHTML = `${f(va)} → ${f(vb)}`;
        card.append(v, el('div', { class: 'b', text: d == null ? 'A → B' : `A → B: ${d >= 0 ? '+' : ''}${num(d * 100, 1)} %` }));
      } else {
        card.append(v);
        if (bpath) card.append(el('div', { class: 'b', text: bf(get(an(A), bpath)) }));
      }
      cards.append(card);
    }
    sec.append(cards);
    /* A document computed elsewhere (analyze --from clickhouse) lists the
     * parts it does not hold yet: say so, rather than show empty cards. */
    for (const r of RUNS) {
      const nc = an(r) && an(r).not_covered;
      if (Array.isArray(nc) && nc.length)
        sec.append(el('div', { class: 'note', id: 'not-covered', text: (COMPARE ? r.label + ': ' : '') +
          `analyze's figures come from ${an(r).source || 'elsewhere'}; not in this page yet: ${nc.join(', ')} ` +
          '(servprof report on the stores themselves has them).' }));
    }
    for (const r of RUNS) {
      const h = an(r) && an(r).headline;
      if (!h) continue;
      const top = (an(r).findings || [])[0];
      const words = { bottleneck: 'Bottleneck', under_loaded: 'Under-loaded: no bottleneck',
        no_bottleneck: 'No bottleneck found', no_data: 'Not enough data' };
      let text = (COMPARE ? r.label + ': ' : '') + (words[h.verdict] || h.verdict || '');
      if (top && h.verdict === 'bottleneck') text += ' — ' + top.title;
      sec.append(el('div', { class: 'verdict ' + (h.verdict || ''), text }));
    }
    sec.append(glance());
  }

  /* The four questions a serving engineer asks first, answered with the
   * figures that answer them (analyze's, and the largest step batch seen). */
  function glance() {
    const ul = el('ul', { class: 'glance', id: 'glance' });
    for (const r of RUNS) {
      const h = an(r) && an(r).headline;
      if (!h) continue;
      const who = COMPARE ? r.label + ': ' : '';
      const bs = get(r, 'db.steps.batch_size') || [];
      const largest = bs.reduce((m, v) => v != null && v > m ? v : m, 0);
      const P = get(an(r), 'ttft_breakdown.percentiles') || {};
      const parts = PHASES.slice(0, 4).map(([k, label]) => [label, get(P, k + '.p90')])
        .filter(([, v]) => v != null).sort((a, b) => b[1] - a[1]);
      const slow = (r.db.slowest || []).slice(0, 10);
      const decodeShare = slow.length ? slow.reduce((s, q) => s + (q.decode_ms || 0), 0) /
        Math.max(1e-9, slow.reduce((s, q) => s + (q.e2e_ms || 0), 0)) : null;
      const rows = [
        ['Is the batch full?', `${num(h.batch_size_mean)} requests per step on average; the largest step held ${num(largest, 0)}`],
        ['Is KV the limit?', `KV usage peaked at ${pct(h.kv_usage_peak)} (mean ${pct(h.kv_usage_mean)}); ${num(h.preemptions, 0)} preemptions`],
        ['Where do slow requests spend their time?', (parts.length ? `TTFT P90 by part: ${parts.map(([l, v]) => `${l} ${num(v)} ms`).join(', ')}` : 'no TTFT breakdown') +
          (decodeShare == null ? '' : `; the 10 slowest spent ${num(decodeShare * 100, 0)} % of their time decoding`)],
        ['Is the engine stalled or idle?', `busy ${pct(h.busy_frac)}, stalled ${pct(h.stalled_frac)} (work waiting, device idle), idle ${pct(h.idle_frac)} (nothing to run)`],
      ];
      for (const [q, a] of rows) ul.append(el('li', {}, el('b', { text: who + q + ' ' }), a));
    }
    return ul;
  }

  function findings() {
    const box = $('findings');
    for (const r of RUNS) {
      const list = an(r) ? (an(r).findings || []) : null;
      if (COMPARE) box.append(el('h3', { text: 'Run ' + r.label }));
      if (!list) { box.append(el('div', { class: 'note', text: 'no analyze document for this run' })); continue; }
      if (!an(r).findings && (an(r).not_covered || []).includes('findings')) {
        box.append(el('div', { class: 'note', text: `findings are not computed in ${an(r).source || 'this source'} yet` }));
        continue;
      }
      if (!list.length) { box.append(el('div', { class: 'note', text: 'no findings: nothing crossed a threshold' })); continue; }
      const ol = el('ol', { class: 'findings' });
      for (const f of list) {
        const ex = (f.examples || []).map(x => `${x.rid ? x.rid + ' at' : 'at'} ${num(relS(r, x.ts_ns), 3)} s` +
          (x.what ? ` (${x.what})` : ''));
        const fig = f.figure ? `${f.figure.name} = ${num(f.figure.value)}${f.figure.unit === 'frac' ? '' : ' ' + (f.figure.unit || '')}` : '';
        const thr = f.threshold ? ` (threshold ${f.threshold.name} ${f.threshold.op} ${num(f.threshold.value)})` : '';
        ol.append(el('li', { class: f.bottleneck === false ? 'state' : '' },
          el('div', { class: 't', text: `${f.title}` }),
          el('div', { class: 'e', text: f.evidence || '' }),
          fig ? el('div', { class: 'x', text: fig + thr }) : null,
          f.knob ? el('div', { class: 'kn', text: 'Knob: ' + f.knob }) : null,
          ex.length ? el('div', { class: 'x', text: 'Look at: ' + ex.join('; ') }) : null));
      }
      box.append(ol);
    }
  }

  /* ------------------------------------------------------- time charts */
  const timeCharts = [];
  let syncing = false;
  const xEnd = Math.max(...RUNS.map(r => r.db.duration_s || 0)) || 1;

  function resetZoom() {
    syncing = true;
    for (const u of timeCharts) u.setScale('x', { min: 0, max: xEnd });
    syncing = false;
  }
  function followZoom(u, key) {
    if (key !== 'x' || syncing) return;
    syncing = true;
    const { min, max } = u.scales.x;
    for (const c of timeCharts) if (c !== u) c.setScale('x', { min, max });
    syncing = false;
  }

  /* One series of a run: {label, t, v, scale, color, stepped, value (legend
   * formatter)}. Builds the chart from aligned tables (uPlot.join). */
  function buildChart(box, spec, series, opts) {
    opts = opts || {};
    if (!series.length) return null;
    const tables = series.map(s => [s.t, s.v]);
    const data = tables.length === 1 ? tables[0] : uPlot.join(tables);
    const scales = {};
    const axes = [{ label: opts.xLabel || 'time since start (s)', size: 36 }];
    const usedScales = [...new Set(series.map(s => s.scale || 'y'))];
    usedScales.forEach((sc, i) => {
      scales[sc] = { auto: true, range: (u, mn, mx) => [Math.min(0, mn), mx > mn ? mx * 1.05 : mn + 1] };
      axes.push({ scale: sc, side: i === 0 ? 3 : 1, grid: { show: i === 0 }, size: 60,
        label: (spec.units || {})[sc] || spec.unit || '', values: (u, vals) => vals.map(v => num(v)) });
    });
    scales.x = { time: false, range: opts.xRange };
    const uSeries = [{ label: opts.xName || 't (s)', value: (u, v) => v == null ? '–' : num(v, 3) }];
    for (const s of series) {
      uSeries.push({
        label: s.label, scale: s.scale || 'y', stroke: s.color, width: s.width || 1.25,
        dash: s.dash, fill: s.fill, spanGaps: true, /* points: uPlot's default, drawn where data is sparse */
        paths: s.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
        value: s.value || ((u, v) => v == null ? '–' : num(v)),
      });
    }
    const wrap = el('div', { class: 'chart', id: 'chart-' + spec.id },
      el('h3', { text: spec.title + ' ' }, spec.hint ? el('span', { class: 'hint', text: spec.hint }) : null));
    box.append(wrap);
    const width = Math.max(300, wrap.clientWidth - 16);
    const u = new uPlot({
      width, height: opts.height || 190, scales, axes, series: uSeries, bands: opts.bands,
      legend: { live: true },
      cursor: opts.time === false ? { sync: { key: 'servprof-' + spec.id } }
        : { sync: { key: 'servprof-time' },
            bind: { dblclick: () => () => { resetZoom(); return null; } } },
      hooks: opts.time === false ? {} : { setScale: [followZoom] },
    }, data, wrap);
    if (opts.time !== false) timeCharts.push(u);
    let points = 0;
    for (const s of series) points += s.v.filter(v => v != null).length;
    STATE.charts.push({ id: spec.id, title: spec.title, kind: opts.time === false ? 'cdf' : 'time', points, uplot: u });
    return u;
  }

  const runDash = ri => ri === 1 ? [6, 4] : undefined;
  const runLabel = (label, ri) => COMPARE ? `${label} (${RUNS[ri].label})` : label;

  /* Analyze's windows (scope "all") as stepped series: one point at each
   * window's start plus the last window's end. */
  function windowSeries(run, pick) {
    const rows = (get(an(run), 'windows.rows') || []).filter(w => w.scope === 'all');
    if (!rows.length) return null;
    const t = [], v = [];
    for (const w of rows) { t.push(relS(run, w.start_ns)); v.push(pick(w)); }
    const last = rows[rows.length - 1];
    t.push(relS(run, last.end_ns)); v.push(pick(last));
    return { t, v: v.map(x => (x == null || !isFinite(x)) ? null : x) };
  }

  function windowChart(box, spec, fields) {
    const series = [];
    RUNS.forEach((r, ri) => fields.forEach(([label, pick, scale], fi) => {
      const s = windowSeries(r, pick);
      if (s) series.push({ ...s, label: runLabel(label, ri), scale, color: PALETTE[fi], dash: runDash(ri), stepped: true });
    }));
    if (!series.length) { missing.push(spec.title + ' (needs analyze\'s windows)'); return; }
    buildChart(box, spec, series);
  }

  /* The engine's time budget, stacked: busy at the bottom, stalled, idle on
   * top; the legend shows each part (not the running sum). */
  function budgetChart(box) {
    const series = [], bands = [];
    const parts = [['busy', 'busy_frac', '#16a34a'], ['stalled', 'stalled_frac', '#dc2626'], ['idle', 'idle_frac', '#a3a3a3']];
    RUNS.forEach((r, ri) => {
      const raw = parts.map(([, k]) => windowSeries(r, w => w[k] == null ? null : w[k] * 100));
      if (!raw[0]) return;
      const base = series.length;
      let sum = raw[0].v.map(() => 0);
      parts.forEach(([label, , color], pi) => {
        const own = raw[pi].v;
        sum = sum.map((s, i) => s + (own[i] || 0));
        series.push({ t: raw[pi].t, v: sum.slice(), label: runLabel(label, ri), color, dash: runDash(ri), stepped: true,
          fill: ri === 0 ? color + '55' : undefined, value: (u, v, si, idx) => idx == null || own[idx] == null ? '–' : num(own[idx], 1) + ' %' });
        if (pi > 0 && ri === 0) bands.push({ series: [base + pi + 1, base + pi], fill: color + '55' });
      });
      if (ri === 0) series[base].fill = parts[0][2] + '55';
    });
    if (!series.length) { missing.push('engine time budget (needs analyze\'s windows)'); return; }
    buildChart(box, { id: 'budget', title: 'Engine time budget per window', unit: '% of the window',
      hint: 'busy = steps executing; stalled = work waiting, device idle (host overhead); idle = nothing to run' },
    series, { bands: RUNS.length === 1 ? bands : undefined });
  }

  /* A profiler.db series set {t, col: [...]} of each run. spec.total names a
   * column that is the sum of the others (batch size, tokens): it is drawn
   * last and wider, so a part equal to it (a decode-only step) cannot hide it. */
  function dbChart(box, spec, pickSet, cols) {
    const series = [], totals = [];
    RUNS.forEach((r, ri) => {
      const set = pickSet(r);
      if (!set || !set.t || !set.t.length) return;
      cols.forEach(([key, label, scale, f], ci) => {
        if (!set[key]) return;
        const v = f ? set[key].map(x => x == null ? null : f(x)) : set[key];
        if (!v.some(x => x != null)) return;
        const s = { t: set.t, v, label: runLabel(label, ri), scale, color: PALETTE[ci % PALETTE.length], dash: runDash(ri),
          stepped: spec.stepped };
        if (key === spec.total) {
          s.width = 2.5;
          totals.push(s);
        } else {
          series.push(s);
        }
      });
    });
    series.push(...totals);
    if (!series.length) return false;
    buildChart(box, spec, series);
    return true;
  }

  const counter = (r, name) => (r.db.counters || []).find(c => c.name === name);
  const usedCounters = new Set();
  function counterChart(box, spec, names, scaleOf, f) {
    const series = [];
    RUNS.forEach((r, ri) => {
      let ci = 0;
      for (const name of names) {
        const c = counter(r, name);
        if (!c || !c.data) continue;
        usedCounters.add(name);
        for (const col of c.cols) {
          const v = f ? c.data[col].map(x => x == null ? null : f(x)) : c.data[col];
          series.push({ t: c.data.t, v, label: runLabel(`${name}: ${col}`, ri), scale: scaleOf ? scaleOf(name, col) : 'y',
            color: PALETTE[ci++ % PALETTE.length], dash: runDash(ri), stepped: spec.stepped });
        }
      }
    });
    if (!series.length) return false;
    buildChart(box, spec, series);
    return true;
  }

  const missing = [];
  function timeChartsAll() {
    const box = $('timecharts');
    windowChart(box, { id: 'throughput', title: 'Throughput per window', units: { y: 'req/s', y2: 'tokens/s' } }, [
      ['requests/s', w => w.throughput_rps, 'y'], ['output tokens/s', w => w.output_tokens_per_s, 'y2']]);
    windowChart(box, { id: 'ttft', title: 'TTFT per window', unit: 'ms', hint: 'requests ending in the window' }, [
      ['P50', w => get(w, 'ttft_ms.p50')], ['P90', w => get(w, 'ttft_ms.p90')], ['P99', w => get(w, 'ttft_ms.p99')]]);
    windowChart(box, { id: 'tpot', title: 'TPOT per window', unit: 'ms' }, [
      ['P50', w => get(w, 'tpot_ms.p50')], ['P90', w => get(w, 'tpot_ms.p90')], ['P99', w => get(w, 'tpot_ms.p99')]]);
    windowChart(box, { id: 'e2e', title: 'End-to-end latency and queue wait per window', unit: 'ms' }, [
      ['e2e P50', w => get(w, 'e2e_ms.p50')], ['e2e P99', w => get(w, 'e2e_ms.p99')],
      ['queue P50', w => get(w, 'queue_ms.p50')], ['queue P99', w => get(w, 'queue_ms.p99')]]);
    budgetChart(box);
    const steps = r => r.db.steps;
    if (!dbChart(box, { id: 'batch', title: 'Batch size per step', unit: 'requests', stepped: true, total: 'batch_size',
      hint: '(min/max per time bucket)' }, steps, [
      ['batch_size', 'batch size'], ['prefill_batch', 'prefill'], ['decode_batch', 'decode']]))
      missing.push('batch size per step (no batch records)');
    dbChart(box, { id: 'tokens', title: 'Scheduled tokens per step', unit: 'tokens', stepped: true, total: 'tokens' }, steps, [
      ['tokens', 'total'], ['prefill_tokens', 'prefill'], ['decode_tokens', 'decode']]);
    if (!counterChart(box, { id: 'kv', title: 'KV cache usage', unit: '%' }, ['KV cache usage'], null, x => x * 100) &&
        !dbChart(box, { id: 'kv', title: 'KV cache usage (at each step)', unit: '%' }, steps, [['kv_usage', 'usage']]))
      missing.push('KV cache usage (no KVCacheStatus records)');
    counterChart(box, { id: 'kvblocks', title: 'KV cache blocks', unit: 'blocks' }, ['KV cache blocks']);
    if (!counterChart(box, { id: 'queues', title: 'Queue lengths', unit: 'requests', stepped: true }, ['queue size']))
      missing.push('queue lengths (no Enqueue/Dequeue/Queue records with QueueSize)');
    if (!dbChart(box, { id: 'forward', title: 'Forward steps: duration and gap to the next', unit: 'ms' }, r => r.db.forward, [
      ['dur_ms', 'duration'], ['gap_ms', 'gap (bubble)']]))
      missing.push('forward steps (no forward spans)');
    /* The process's own figures on the right axis: they are far smaller. */
    const own = name => name.startsWith('process') ? 'y2' : 'y';
    const hostCpu = counterChart(box, { id: 'cpu', title: 'CPU', units: { y: 'host busy %', y2: 'process % of a core' },
      hint: 'host: busy % of the machine; process: % of one core' }, ['host CPU', 'process CPU'], own);
    const hostMem = counterChart(box, { id: 'mem', title: 'Memory', units: { y: 'host MiB', y2: 'process MiB' } },
      ['host memory', 'process memory'], own);
    if (!hostCpu && !hostMem) missing.push('host CPU and memory (set host_system_usage_freq in the config)');
    const gpuNames = kind => [...new Set(RUNS.flatMap(r => (r.db.counters || []).map(c => c.name)))]
      .filter(n => new RegExp('^GPU \\d+ ' + kind + '$').test(n));
    if (!counterChart(box, { id: 'gpumem', title: 'Device memory', unit: 'MiB' }, gpuNames('memory')))
      missing.push('device memory (set npu_memory_usage_freq in the config; needs NVML)');
    counterChart(box, { id: 'gpuutil', title: 'Device utilization', unit: '%' }, gpuNames('utilization'));
    /* Any other counter the parser knows gets its own chart. */
    const others = [...new Set(RUNS.flatMap(r => (r.db.counters || []).map(c => c.name)))].filter(n => !usedCounters.has(n));
    others.forEach((n, i) => counterChart(box, { id: 'counter' + i, title: n, unit: '' }, [n]));
    $('missing').textContent = missing.length ? 'Not in this run: ' + missing.join('; ') + '.' : '';
  }

  /* ------------------------------------------------------ distributions */
  function cdfs() {
    const box = $('cdfs');
    const defs = [['ttft', 'TTFT'], ['tpot', 'TPOT'], ['e2e', 'End-to-end latency'], ['queue', 'Queue wait']];
    for (const [key, title] of defs) {
      const series = [];
      RUNS.forEach((r, ri) => {
        const c = get(r, 'db.cdf.' + key);
        if (!c || !c.x || !c.x.length) return;
        series.push({ t: c.x, v: c.p.map(p => p * 100), label: COMPARE ? `run ${r.label} (n=${c.n})` : `share of requests (n=${c.n})`,
          color: PALETTE[ri], dash: runDash(ri), value: (u, v) => v == null ? '–' : num(v, 1) + ' %' });
      });
      if (!series.length) continue;
      buildChart(box, { id: 'cdf-' + key, title: title + ' CDF', unit: '% of requests ≤ x' }, series,
        { time: false, xLabel: 'ms', xName: 'ms', height: 170 });
    }
  }

  function barOf(parts, total, scaleMax) {
    const bar = el('div', { class: 'bar', style: `width:${Math.max(0.5, 100 * total / scaleMax)}%` });
    for (const [v, label, color] of parts) {
      if (!(v > 0)) continue;
      bar.append(el('span', { style: `width:${100 * v / total}%;background:${color}`, title: `${label}: ${num(v)} ms` }));
    }
    return bar;
  }

  function phaseLegend(box) {
    for (const [, label, color] of PHASES)
      box.append(el('span', { class: 'legend-k' }, el('i', { style: 'background:' + color }), label));
  }

  function breakdown() {
    const box = $('breakdown');
    const runs = RUNS.filter(r => get(an(r), 'ttft_breakdown.percentiles'));
    if (!runs.length) { box.append(el('div', { class: 'note', text: 'not available (needs analyze\'s TTFT breakdown)' })); return; }
    const card = el('div', { class: 'breakdown', id: 'breakdown-bars' });
    phaseLegend(card);
    const keys = PHASES.slice(0, 4);
    let max = 0;
    for (const r of runs) for (const p of ['p50', 'p90', 'p99']) {
      const P = an(r).ttft_breakdown.percentiles;
      max = Math.max(max, keys.reduce((s, [k]) => s + (get(P, k + '.' + p) || 0), 0));
    }
    for (const r of runs) for (const p of ['p50', 'p90', 'p99']) {
      const P = an(r).ttft_breakdown.percentiles;
      const parts = keys.map(([k, label, color]) => [get(P, k + '.' + p) || 0, label, color]);
      const total = parts.reduce((s, x) => s + x[0], 0);
      card.append(el('div', { class: 'row' }, el('div', { text: (COMPARE ? r.label + ' ' : '') + p.toUpperCase() }),
        el('div', {}, barOf(parts, total || 1, max || 1)),
        el('div', { text: `TTFT ${num(get(P, 'ttft_ms.' + p))} ms` })));
    }
    box.append(card);
  }

  /* ----------------------------------------------------- slowest table */
  function slowest() {
    const rows = [];
    for (const r of RUNS) for (const q of (r.db.slowest || [])) rows.push({ run: r.label, ...q });
    const note = $('slowest-note');
    note.textContent = `the ${num((RUNS[0].db.slowest || []).length, 0)} slowest by end-to-end time` +
      (COMPARE ? ' of each run' : '') + '; click a column to sort; the bar is the request\'s time, to scale';
    phaseLegend($('phase-legend'));
    const cols = [
      ...(COMPARE ? [['run', 'run', 'l']] : []),
      ['rid', 'request', 'l'], ['start_s', 'start (s)'], ['e2e_ms', 'e2e ms'], ['ttft_ms', 'TTFT ms'],
      ['queue_ms', 'queue ms'], ['schedule_ms', 'schedule ms'], ['prefill_ms', 'prefill ms'],
      ['first_decode_wait_ms', '1st-decode wait ms'], ['decode_ms', 'decode ms'], ['tpot_ms', 'TPOT ms'],
      ['in_tokens', 'in tok'], ['out_tokens', 'out tok'], ['preempted', 'preempt'], ['bar', 'phases', 'l'],
    ];
    const table = $('slowest');
    const maxE2e = Math.max(1e-9, ...rows.map(q => q.e2e_ms || 0));
    let sortKey = 'e2e_ms', desc = true;
    const thead = el('thead'), tbody = el('tbody');
    const tr = el('tr');
    for (const [k, label, cls] of cols) {
      const th = el('th', { class: cls || '', text: label, 'data-key': k });
      if (k !== 'bar') th.addEventListener('click', () => {
        desc = sortKey === k ? !desc : k !== 'rid' && k !== 'run';
        sortKey = k;
        render();
      });
      tr.append(th);
    }
    thead.append(tr);
    table.append(thead, tbody);
    function phasesOf(q) {
      /* analyze's parts when it had this request; else request.csv's
       * (prefill then runs to the first token). */
      return PHASES.map(([k, label, color]) => [q[k] || 0, label, color]);
    }
    function render() {
      rows.sort((a, b) => {
        const x = a[sortKey], y = b[sortKey];
        const c = (x == null) - (y == null) || (typeof x === 'string' ? x.localeCompare(y) : x - y);
        return desc ? -c : c;
      });
      for (const th of thead.querySelectorAll('th'))
        th.classList.toggle('sorted-desc', th.dataset.key === sortKey && desc),
        th.classList.toggle('sorted-asc', th.dataset.key === sortKey && !desc);
      tbody.replaceChildren(...rows.map(q => el('tr', {}, ...cols.map(([k, , cls]) => {
        if (k === 'bar') return el('td', { class: 'l', style: 'width:28%' }, barOf(phasesOf(q), q.e2e_ms || 0, maxE2e));
        const v = q[k];
        return el('td', { class: cls || '', text: typeof v === 'number' ? num(v, k === 'start_s' ? 3 : undefined) : (v == null ? '–' : String(v)) });
      }))));
    }
    render();
  }

  /* ------------------------------------------------------ compare table */
  function compareTable() {
    if (!COMPARE) return;
    $('compare-sec').hidden = false;
    const c = D.compare;
    const table = $('compare-table');
    if (!c) { $('compare-note').textContent = '(no compare document: servprof report said why when it ran)'; return; }
    /* The first array of objects in the document is its table. */
    const key = Object.keys(c).find(k => Array.isArray(c[k]) && c[k].length && typeof c[k][0] === 'object');
    if (c.method) $('compare-note').textContent = `(${c.method})`;
    if (!key) return;
    const rows = c[key];
    const cols = [...new Set(rows.flatMap(r => Object.keys(r)))];
    table.append(el('thead', {}, el('tr', {}, ...cols.map(k => el('th', { class: typeof rows[0][k] === 'string' ? 'l' : '', text: k })))));
    table.append(el('tbody', {}, ...rows.map(r => el('tr', {}, ...cols.map(k => {
      const v = r[k];
      const cls = typeof v === 'string' ? 'l' : '';
      if (typeof v === 'boolean') return el('td', { class: v ? 'sig' : '', text: v ? 'yes' : 'no' });
      return el('td', { class: cls, text: typeof v === 'number' ? num(v) : (v == null ? '–' : String(v)) });
    })))));
    const extra = Object.keys(c).filter(k => k !== key && Array.isArray(c[k]) && c[k].length && typeof c[k][0] !== 'object');
    for (const k of extra) $('compare-sec').append(el('div', { class: 'note', text: `${k}: ${c[k].join(', ')}` }));
  }

  /* ---------------------------------------------------------------- moe */
  /* Per-rank heat map (expert-compute ms per step column, brighter = longer)
   * and the balance ratios over time, of the first run. */
  function moe() {
    const m = RUNS[0].db.moe;
    if (!m || !m.ranks || !m.ranks.length) return;
    $('moe-sec').hidden = false;
    const box = $('moe');
    const cols = m.heat.steps.length, rows = m.ranks.length;
    /* Each column is scaled to its slowest rank, as the reference scales its
     * hot maps per row: a decode step's imbalance shows as well as a
     * prefill's, whatever their sizes. */
    let max = 0;
    const colMax = m.heat.steps.map((_, c) => Math.max(...m.heat.ms.map(r => r[c])));
    for (const v of colMax) if (v > max) max = v;
    const cw = Math.max(2, Math.min(8, Math.floor(900 / Math.max(1, cols)))), ch = 18, left = 70;
    const cv = el('canvas', { id: 'moe-heat', width: left + cols * cw, height: rows * ch + 20 });
    const g = cv.getContext('2d');
    g.font = '11px sans-serif';
    for (let r = 0; r < rows; r++) {
      g.fillStyle = '#333';
      g.fillText('rank ' + m.ranks[r], 4, r * ch + 13);
      for (let c = 0; c < cols; c++) {
        const f = colMax[c] > 0 ? m.heat.ms[r][c] / colMax[c] : 0;
        g.fillStyle = `rgb(${Math.round(255 * f)}, ${Math.round(200 * f * f)}, ${Math.round(90 * (1 - f))})`;
        g.fillRect(left + c * cw, r * ch, cw, ch - 2);
      }
    }
    g.fillStyle = '#333';
    g.fillText(`steps ${m.heat.steps[0]} … ${m.heat.steps[cols - 1]}; each column scaled to its slowest rank ` +
               `(the slowest column: ${num(max)} ms)`, left, rows * ch + 14);
    box.append(el('div', { class: 'chart', id: 'chart-moe-heat' },
      el('h3', { text: 'Expert compute per rank and step ' },
        el('span', { class: 'hint', text: 'expert-compute ms per step (mean of each column\'s steps), each column scaled to its slowest rank: a hot expert\'s rank is a bright row' })),
      cv));
    STATE.moeHeat = { ranks: rows, columns: cols, max_ms: max }; /* for the browser test; not a uPlot chart */
    const b = m.balance;
    if (b && b.t && b.t.length) {
      const grid = el('div', { class: 'grid' });
      box.append(grid);
      buildChart(grid, { id: 'moe-balance', title: 'Balance over time', unit: 'max / mean',
                         units: { y: 'max / mean', std: 'rows (std)' },
                         hint: '1 = balanced; balance ratio: the reference\'s std of the rank loads' }, [
        { label: 'slowest rank compute / mean', t: b.t, v: b.compute_ratio, color: PALETTE[1] },
        { label: 'busiest rank rows / mean', t: b.t, v: b.load_ratio, color: PALETTE[0] },
        { label: 'balance ratio (std)', t: b.t, v: b.balance_ratio, color: PALETTE[2], scale: 'std' },
      ]);
    }
  }

  /* --------------------------------------------------------------- main */
  function main() {
    header();
    headline();
    findings();
    compareTable();
    timeChartsAll();
    moe();
    cdfs();
    breakdown();
    slowest();
    resetZoom();
    window.addEventListener('resize', () => {
      for (const c of STATE.charts) {
        const w = c.uplot.root.parentNode.clientWidth - 16;
        if (w > 300) c.uplot.setSize({ width: w, height: c.uplot.height });
      }
    });
    /* Ready once the charts have painted (uPlot draws on the next frame). */
    requestAnimationFrame(() => requestAnimationFrame(() => {
      STATE.renderMs = performance.now();
      STATE.ready = true;
    }));
  }
  try { main(); } catch (e) { STATE.errors.push(String(e && e.stack || e)); throw e; }
})();
