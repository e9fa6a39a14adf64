// The syscall graph of a syscluster page: a layered drawing of the heaviest
// edges in SVG (cycles broken by a depth-first search, layers by longest
// path, order within layers by barycenters), with pan, zoom, tooltips and a
// details panel. No libraries, no network.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const graph = document.getElementById("graph");
  const details = document.getElementById("details");
  const tip = document.getElementById("tooltip");
  const fmt = (n) => Number(n).toLocaleString("en-US");
  const dur = (ns) => ns < 1e3 ? ns + " ns" : ns < 1e6 ? (ns / 1e3).toFixed(1) + " µs" : ns < 1e9 ? (ns / 1e6).toFixed(2) + " ms" : (ns / 1e9).toFixed(2) + " s";
  const el = (name, attrs, parent) => {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  const byId = new Map(data.nodes.map((n) => [n.id, n]));

  // Which nodes: those of the drawn (heaviest) edges, else the busiest.
  const edges = data.edges.filter((e) => e.weight > 0 && byId.has(e.from) && byId.has(e.to));
  const ids = new Set();
  edges.forEach((e) => { ids.add(e.from); ids.add(e.to); });
  if (ids.size === 0) data.nodes.slice().sort((a, b) => b.count - a.count).slice(0, 30).forEach((n) => ids.add(n.id));
  const nodes = [...ids].map((id) => byId.get(id));
  const advised = new Set();
  data.recommendations.forEach((r) => r.nodes.forEach((n) => advised.add(n)));

  // Break cycles: a depth-first search from the sources, then the busiest;
  // an edge to a node on the stack is a back edge.
  const out = new Map(nodes.map((n) => [n.id, []]));
  const indeg = new Map(nodes.map((n) => [n.id, 0]));
  edges.forEach((e) => {
    if (e.from !== e.to) { out.get(e.from).push(e); indeg.set(e.to, indeg.get(e.to) + 1); }
  });
  out.forEach((l) => l.sort((a, b) => b.weight - a.weight));
  const starts = nodes.slice().sort((a, b) => (indeg.get(a.id) === 0) - (indeg.get(b.id) === 0) || a.count - b.count).reverse();
  const state = new Map(), back = new Set(), post = [];
  for (const s of starts) {
    if (state.has(s.id)) continue;
    const stack = [[s.id, 0]];
    state.set(s.id, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const list = out.get(top[0]);
      if (top[1] < list.length) {
        const e = list[top[1]++];
        const st = state.get(e.to);
        if (st === 1) back.add(e);
        else if (!st) { state.set(e.to, 1); stack.push([e.to, 0]); }
      } else {
        state.set(top[0], 2);
        post.push(top[0]);
        stack.pop();
      }
    }
  }
  // Layers: longest path over the forward edges, in topological order.
  const layer = new Map(nodes.map((n) => [n.id, 0]));
  post.slice().reverse().forEach((id) => {
    out.get(id).forEach((e) => { if (!back.has(e)) layer.set(e.to, Math.max(layer.get(e.to), layer.get(id) + 1)); });
  });
  const layers = [];
  post.slice().reverse().forEach((id) => { (layers[layer.get(id)] = layers[layer.get(id)] || []).push(id); });
  // Order within layers: barycenters of the neighbours, a few sweeps.
  const pos = new Map();
  const setPos = () => layers.forEach((l) => l.forEach((id, i) => pos.set(id, i)));
  setPos();
  const nbrs = new Map(nodes.map((n) => [n.id, []]));
  edges.forEach((e) => { if (e.from !== e.to) { nbrs.get(e.from).push(e.to); nbrs.get(e.to).push(e.from); } });
  for (let sweep = 0; sweep < 6; sweep++) {
    const range = sweep % 2 ? [...layers.keys()].reverse() : [...layers.keys()];
    range.forEach((li) => {
      const l = layers[li];
      if (!l) return;
      const bc = new Map(l.map((id) => {
        const ns = nbrs.get(id).filter((m) => layer.get(m) !== li);
        return [id, ns.length ? ns.reduce((s, m) => s + pos.get(m), 0) / ns.length : pos.get(id)];
      }));
      l.sort((a, b) => bc.get(a) - bc.get(b));
      l.forEach((id, i) => pos.set(id, i));
    });
  }
  // Coordinates.
  const H = 40, GAP = 34, LAYER = 96;
  const box = new Map();
  layers.forEach((l, li) => {
    if (!l) return;
    const widths = l.map((id) => Math.max(96, 7.4 * byId.get(id).label.length + 24));
    const total = widths.reduce((a, b) => a + b, 0) + GAP * (l.length - 1);
    let x = -total / 2;
    l.forEach((id, i) => { box.set(id, { x, y: li * LAYER, w: widths[i], h: H }); x += widths[i] + GAP; });
  });

  const svg = el("svg", { id: "graph-svg", role: "img", "aria-label": "syscall graph" });
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerUnits: "userSpaceOnUse", markerWidth: "9", markerHeight: "9", orient: "auto-start-reverse" }, defs);
  el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#64748b" }, marker);
  const world = el("g", { id: "world" }, svg);
  const maxW = Math.max(1, ...edges.map((e) => e.weight));
  const maxC = Math.max(1, ...nodes.map((n) => n.count));

  const showTip = (ev, text) => { tip.textContent = text; tip.hidden = false; tip.style.left = ev.clientX + 14 + "px"; tip.style.top = ev.clientY + 12 + "px"; };
  const hideTip = () => { tip.hidden = true; };

  edges.forEach((e) => {
    const a = box.get(e.from), b = box.get(e.to);
    const width = 1 + 6 * Math.log1p(e.weight) / Math.log1p(maxW);
    let d, lx, ly;
    if (e.from === e.to) {
      const x = a.x + a.w, y = a.y + a.h / 2;
      d = `M${x},${y - 10} C${x + 46},${y - 34} ${x + 46},${y + 34} ${x},${y + 10}`;
      lx = x + 40; ly = y;
    } else if (layer.get(e.to) > layer.get(e.from)) {
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
      const dy = (y2 - y1) / 2;
      d = `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`;
      lx = (x1 + x2) / 2 + 4; ly = (y1 + y2) / 2;
    } else {
      // Back or sideways edges go round the right of both nodes.
      const x1 = a.x + a.w, y1 = a.y + a.h / 2 - 6, x2 = b.x + b.w, y2 = b.y + b.h / 2 + 6;
      const bulge = 50 + Math.abs(y2 - y1) / 4;
      d = `M${x1},${y1} C${x1 + bulge},${y1} ${x2 + bulge},${y2} ${x2},${y2}`;
      lx = Math.max(x1, x2) + bulge * 0.75; ly = (y1 + y2) / 2;
    }
    const p = el("path", { class: "edge", d, "stroke-width": width.toFixed(2), "marker-end": "url(#arrow)", "data-from": e.from, "data-to": e.to, "data-weight": e.weight }, world);
    const fromL = byId.get(e.from).label, toL = byId.get(e.to).label;
    const m = e.matches.map((x) => `${toL}.${x.arg} = result of ${fromL}: ${fmt(x.count)} (${(100 * x.count / e.weight).toFixed(0)}%)`).join("\n");
    p.addEventListener("mousemove", (ev) => showTip(ev, `${fromL} → ${toL}: ${fmt(e.weight)} times (${(100 * e.weight / Math.max(1, data.total)).toFixed(1)}% of calls)${m ? "\n" + m : ""}`));
    p.addEventListener("mouseleave", hideTip);
    const t = el("text", { class: "edge-label", x: lx, y: ly }, world);
    t.textContent = fmt(e.weight);
  });

  const gNodes = new Map();
  nodes.forEach((n) => {
    const b = box.get(n.id);
    const g = el("g", { class: "node" + (advised.has(n.id) ? " advised" : ""), "data-id": n.id, "data-label": n.label, transform: `translate(${b.x},${b.y})` }, world);
    const shade = Math.log1p(n.count) / Math.log1p(maxC);
    const light = 96 - 50 * shade;
    el("rect", { width: b.w, height: b.h, rx: 6, fill: `hsl(212, 70%, ${light.toFixed(0)}%)` }, g);
    const fg = light < 60 ? "#fff" : "#111827";
    const t1 = el("text", { x: b.w / 2, y: 17, "text-anchor": "middle", fill: fg, "font-weight": "600" }, g);
    t1.textContent = n.label;
    const t2 = el("text", { x: b.w / 2, y: 32, "text-anchor": "middle", fill: fg }, g);
    t2.textContent = fmt(n.count) + (n.count === 1 ? " call" : " calls");
    g.addEventListener("mousemove", (ev) => showTip(ev, `${n.label}: ${fmt(n.count)} calls (${(100 * n.count / Math.max(1, data.total)).toFixed(1)}%), ${fmt(n.errors)} errors${n.kernel_ns ? ", " + dur(n.kernel_ns) + " in the kernel" : ""}${n.callsites.length ? "\nat " + n.callsites[0].where : ""}`));
    g.addEventListener("mouseleave", hideTip);
    g.addEventListener("click", (ev) => { ev.stopPropagation(); select(n.id); });
    gNodes.set(n.id, g);
  });
  graph.appendChild(svg);

  // The details panel of a node: code locations and value profiles.
  function select(id) {
    const n = byId.get(id);
    if (!n) return;
    gNodes.forEach((g) => g.classList.remove("selected"));
    if (gNodes.has(id)) gNodes.get(id).classList.add("selected");
    details.replaceChildren();
    const h = document.createElement("h3");
    h.textContent = n.label;
    details.appendChild(h);
    const p = document.createElement("p");
    p.textContent = `${fmt(n.count)} calls, ${fmt(n.errors)} errors` + (n.kernel_ns ? `, ${dur(n.kernel_ns)} in the kernel` : "");
    details.appendChild(p);
    const table = (title, head, rows, cls) => {
      const h4 = document.createElement("h4");
      h4.textContent = title;
      details.appendChild(h4);
      if (!rows.length) {
        const none = document.createElement("p");
        none.textContent = "none recorded";
        details.appendChild(none);
        return;
      }
      const t = document.createElement("table");
      t.className = cls;
      const tr = t.insertRow();
      head.forEach((x) => { const th = document.createElement("th"); th.textContent = x; tr.appendChild(th); });
      rows.forEach((r) => { const row = t.insertRow(); r.forEach((x) => { row.insertCell().textContent = x; }); });
      details.appendChild(t);
    };
    table("code locations", ["where", "function", "calls"], n.callsites.map((c) => [c.where, c.function || "?", fmt(c.count)]), "callsites");
    const vps = data.values.filter((v) => v.syscall === n.syscall);
    table(`value profiles of ${n.syscall}`, ["argument", "top values (share)"], vps.map((v) => [v.arg, v.top.map((t) => `${t[0]} (${(100 * t[1]).toFixed(0)}%)`).join(", ")]), "values");
    const recs = data.recommendations.filter((r) => r.nodes.includes(id));
    if (recs.length) {
      const h4 = document.createElement("h4");
      h4.textContent = "recommendations";
      details.appendChild(h4);
      recs.forEach((r) => {
        const a = document.createElement("a");
        a.href = "#rec-" + r.rank;
        a.textContent = `#${r.rank} ${r.rule}`;
        details.appendChild(a);
        details.appendChild(document.createElement("br"));
      });
    }
    details.dataset.node = id;
  }

  // Pan and zoom by moving the view box.
  const bb = world.getBBox();
  const pad = 30;
  const home = { x: bb.x - pad, y: bb.y - pad, w: Math.max(bb.width + 2 * pad, 200), h: Math.max(bb.height + 2 * pad, 150) };
  let view = Object.assign({}, home);
  const apply = () => svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  // Start where the calls are: if fitting the whole graph would shrink the
  // labels below legibility, centre the busiest node at a readable scale
  // ("fit" shows everything).
  const r0 = svg.getBoundingClientRect();
  const fitScale = Math.min(r0.width / home.w, r0.height / home.h);
  if (r0.width > 0 && fitScale < 0.7) {
    const busiest = nodes.reduce((a, b) => (b.count > a.count ? b : a));
    const b = box.get(busiest.id);
    const w = r0.width / 0.85, h = r0.height / 0.85;
    view = { x: b.x + b.w / 2 - w / 2, y: b.y + b.h / 2 - h / 2, w, h };
  }
  apply();
  const toWorld = (ev) => {
    const r = svg.getBoundingClientRect();
    const s = Math.max(view.w / r.width, view.h / r.height);
    const ox = (r.width * s - view.w) / 2, oy = (r.height * s - view.h) / 2;
    return { x: view.x - ox + (ev.clientX - r.left) * s, y: view.y - oy + (ev.clientY - r.top) * s, s };
  };
  const zoom = (f, at) => {
    const c = at || { x: view.x + view.w / 2, y: view.y + view.h / 2 };
    view = { x: c.x - (c.x - view.x) * f, y: c.y - (c.y - view.y) * f, w: view.w * f, h: view.h * f };
    apply();
  };
  svg.addEventListener("wheel", (ev) => { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.15 : 1 / 1.15, toWorld(ev)); }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, v: Object.assign({}, view), s: toWorld(ev).s }; svg.classList.add("dragging"); });
  window.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    view.x = drag.v.x - (ev.clientX - drag.x) * drag.s;
    view.y = drag.v.y - (ev.clientY - drag.y) * drag.s;
    apply();
  });
  window.addEventListener("pointerup", () => { drag = null; svg.classList.remove("dragging"); });
  document.getElementById("zoom-in").addEventListener("click", () => zoom(1 / 1.3));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(1.3));
  document.getElementById("zoom-reset").addEventListener("click", () => { view = Object.assign({}, home); apply(); });

  // A recommendation under the pointer lights up its nodes.
  document.querySelectorAll("li.rec").forEach((li) => {
    const ns = (li.dataset.nodes || "").split(" ").filter(Boolean).map(Number);
    li.addEventListener("mouseenter", () => ns.forEach((n) => gNodes.has(n) && gNodes.get(n).classList.add("hl")));
    li.addEventListener("mouseleave", () => ns.forEach((n) => gNodes.has(n) && gNodes.get(n).classList.remove("hl")));
  });
  document.querySelectorAll("tr[data-node]").forEach((tr) => tr.addEventListener("click", () => select(Number(tr.dataset.node))));

  // `#node=ID` in the address selects a node (links, and the page's test).
  const m = /node=(\d+)/.exec(location.hash);
  if (m) select(Number(m[1]));
  graph.dataset.rendered = String(nodes.length);
})();
