// kafkalite console: renders the page its path names from the console's JSON API.
// No dependencies and no build step; charts are inline SVG. Text is always set as text
// (never parsed as HTML), so record keys and values cannot inject markup.
"use strict";

const POLL_MS = 2000;         // how often live pages sample the cluster
const HISTORY = 60;           // samples a live chart keeps (two minutes)
const COLORS = ["#2f6fde", "#e0742b", "#2e9b52", "#b53fa5", "#c7a21b", "#3aa3b5", "#a33", "#666"];

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") el.className = v; else if (k.startsWith("on")) el[k] = v; else el.setAttribute(k, v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

async function getJSON(url, options) {
  const response = await fetch(url, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function table(headers, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map(t => h("th", {}, t)))),
    h("tbody", {}, rows.map(cells => h("tr", {}, cells.map(c => c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c))))));
}

function num(value, cls) { return h("td", {class: "num " + (cls || "")}, value === null || value === undefined ? "-" : value); }
function ids(list) { return list.length ? list.join(",") : "-"; }
function formatBytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}
function link(path, params, text) { return h("a", {href: path + "?" + new URLSearchParams(params)}, text); }
function show(...children) { document.getElementById("main").replaceChildren(...children.filter(c => c !== null)); }
function done() { document.body.dataset.ready = "true"; }

// A line chart of series [{name, points: [[time_ms, value], ...]}] as SVG.
function lineChart(series, unit) {
  const W = 760, H = 240, L = 56, R = 12, T = 12, B = 28;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  const el = (tag, attrs, text) => {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
  };
  const points = series.flatMap(s => s.points);
  const t0 = Math.min(...points.map(p => p[0])), t1 = Math.max(...points.map(p => p[0]));
  const top = Math.max(1, ...points.map(p => p[1])) * 1.1;
  const x = t => L + (t1 > t0 ? (t - t0) / (t1 - t0) : 1) * (W - L - R);
  const y = v => T + (1 - v / top) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = top * i / 4;
    el("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#eef1f5"});
    el("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"}, v >= 100 ? Math.round(v) : v.toFixed(1));
  }
  el("text", {x: L, y: H - 8}, points.length ? new Date(t0).toLocaleTimeString() : "");
  el("text", {x: W - R, y: H - 8, "text-anchor": "end"}, points.length ? new Date(t1).toLocaleTimeString() + "  (" + unit + ")" : "");
  // drawn last to first, so the first series (a total) lies on top of the others
  [...series.entries()].reverse().forEach(([i, s]) => {
    if (!s.points.length) return;
    el("polyline", {fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2,
      points: s.points.map(p => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" ")});
  });
  const legend = h("div", {class: "legend"}, series.map((s, i) =>
    h("span", {}, h("i", {style: "background:" + COLORS[i % COLORS.length]}), s.name)));
  return h("div", {class: "chart-box"}, svg, legend);
}

// Keeps the last HISTORY samples of named series for a live chart.
class History {
  constructor() { this.series = new Map(); }
  add(time, values) {
    for (const [name, value] of Object.entries(values)) {
      if (!this.series.has(name)) this.series.set(name, []);
      const points = this.series.get(name);
      points.push([time, value]);
      if (points.length > HISTORY) points.shift();
    }
  }
  list() { return [...this.series].map(([name, points]) => ({name, points})); }
}

function live(render) {
  const tick = async () => {
    try { await render(); } catch (e) { show(h("p", {class: "error"}, e.message)); }
    done();
  };
  tick();
  setInterval(tick, POLL_MS);
}

const pages = {
  async overview() {
    const o = await getJSON("/api/overview");
    const health = (list, label) => list.length
      ? table(["Topic", "Partition", "Leader", "Replicas", "ISR", "Offline replicas"], list.map(p =>
          [link("/topic", {name: p.topic}, p.topic), num(p.partition), num(p.leader < 0 ? "none" : p.leader),
           ids(p.replicas), h("td", {class: "isr"}, ids(p.isr)), ids(p.offline_replicas)]))
      : h("p", {class: "good"}, "No " + label + " partitions.");
    show(h("h1", {}, "Cluster ", h("span", {class: "muted"}, o.cluster_id || "")),
      h("div", {class: "cards"},
        card("Brokers", o.brokers.length), card("Controller", o.controller_id),
        card("Topics", o.topic_count), card("Partitions", o.partition_count),
        card("Under-replicated", o.under_replicated.length, o.under_replicated.length > 0),
        card("Offline", o.offline.length, o.offline.length > 0)),
      h("h2", {}, "Brokers"),
      table(["Id", "Host", "Port", "Rack", "Role"], o.brokers.map(b =>
        [num(b.broker_id), b.host, num(b.port), b.rack || "-", b.broker_id === o.controller_id ? "controller" : ""])),
      h("h2", {}, "Under-replicated partitions"), health(o.under_replicated, "under-replicated"),
      h("h2", {}, "Offline partitions"), health(o.offline, "offline"));
  },

  async topics() {
    const topics = await getJSON("/api/topics");
    show(h("h1", {}, "Topics"),
      table(["Topic", "Partitions", "Replication", "Messages (end offsets)", "Size", "Under-replicated"],
        topics.map(t => [link("/topic", {name: t.name}, t.name), num(t.partitions.length),
          num(t.replication_factor), num(t.messages), num(formatBytes(t.size)),
          num(t.under_replicated, t.under_replicated ? "bad" : "")])),
      h("h2", {}, "Partitions"),
      partitionTable(topics.flatMap(t => t.partitions), true));
  },

  async topic(settings) {
    const params = new URLSearchParams(location.search);
    const name = params.get("name");
    const t = await getJSON("/api/topics/" + encodeURIComponent(name));
    const partition = params.get("partition") || "0";
    const offset = params.get("offset") || "";
    const m = await getJSON("/api/topics/" + encodeURIComponent(name) + "/messages?" +
      new URLSearchParams({partition, offset}));
    const configs = t.configs === null ? null : Object.entries(t.configs);
    show(h("h1", {}, "Topic ", h("span", {id: "topic-name"}, name)),
      h("div", {class: "cards"}, card("Partitions", t.partitions.length),
        card("Replication", t.replication_factor), card("Messages", t.messages), card("Size", formatBytes(t.size))),
      h("h2", {}, "Partitions"), partitionTable(t.partitions, false),
      h("h2", {}, "Configs (not Kafka's defaults)"),
      configs === null ? h("p", {class: "muted"}, "Not authorized to describe the topic's configs.")
        : configs.length ? table(["Key", "Value"], configs) : h("p", {class: "muted"}, "All defaults."),
      h("h2", {}, "Messages"),
      h("form", {class: "inline", method: "get", action: "/topic"},
        h("input", {type: "hidden", name: "name", value: name}),
        "partition", partitionSelect(t.partitions, partition),
        "from offset", h("input", {name: "offset", value: offset, placeholder: "latest", size: 10}),
        h("button", {type: "submit"}, "Show")),
      h("p", {class: "muted"}, `Offsets ${m.begin_offset} to ${m.end_offset}; showing ${m.records.length} from ${m.start}.`),
      table(["Offset", "Timestamp", "Key", "Headers", "Value"], m.records.map(r =>
        [num(r.offset), new Date(r.timestamp).toISOString(), decoded(r.key),
         h("td", {}, r.headers.map(x => h("div", {}, x.key + ": ", decoded(x.value, true)))), decoded(r.value)])),
      settings.allow_writes ? produceForm(name) : null);
  },

  async groups() {
    const groups = await getJSON("/api/groups");
    show(h("h1", {}, "Consumer groups"),
      groups.length ? table(["Group", "State", "Type", "Protocol type"], groups.map(g =>
        [link("/group", {id: g.group_id}, g.group_id), g.state || "-", g.type || "-", g.protocol_type || "-"]))
      : h("p", {class: "muted"}, "No groups."));
  },

  async group() {
    const id = new URLSearchParams(location.search).get("id");
    const history = new History();
    live(async () => {
      const g = await getJSON("/api/groups/" + encodeURIComponent(id));
      const sample = {"total lag": g.total_lag};
      for (const p of g.partitions) sample[p.topic + "-" + p.partition] = p.lag || 0;
      history.add(Date.now(), sample);
      show(h("h1", {}, "Group ", h("span", {id: "group-id"}, g.group)),
        h("div", {class: "cards"}, card("State", g.state), card("Members", g.members.length),
          card("Total lag", h("span", {id: "total-lag"}, g.total_lag), g.total_lag > 0)),
        h("h2", {}, "Lag"), lineChart(history.list().slice(0, COLORS.length), "messages behind"),
        h("h2", {}, "Partitions"),
        table(["Topic", "Partition", "Committed", "End offset", "Lag", "Member"], g.partitions.map(p =>
          [p.topic, num(p.partition), num(p.committed), num(p.end_offset), num(p.lag, "lag"), p.member_id || "-"])),
        h("h2", {}, "Members"),
        g.members.length ? table(["Member", "Client", "Host", "Assignment"], g.members.map(m =>
          [m.member_id, m.client_id, m.host, m.partitions.map(p => p.topic + "-" + p.partition).join(", ") || "-"]))
        : h("p", {class: "muted"}, "No active members."));
    });
  },

  async throughput(settings) {
    const history = new History();
    const traffic = new History();
    let previous = null, previousMetrics = null;
    live(async () => {
      let fromMetrics = null;
      if (settings.metrics_urls.length) {
        const m = await getJSON("/api/broker-metrics");
        if (previousMetrics) {
          const seconds = Math.max((m.time_ms - previousMetrics.time_ms) / 1000, 0.001);
          const rate = key => Math.max(m[key] - previousMetrics[key], 0) / seconds;
          traffic.add(m.time_ms, {"bytes in": rate("bytes_in"), "bytes out": rate("bytes_out")});
        }
        previousMetrics = m;
        const failed = Object.entries(m.failed);
        fromMetrics = [h("h2", {}, "Bytes per second, from the brokers' metrics"),
          lineChart(traffic.list(), "bytes/s"),
          table(["Since the brokers started", "Messages in", "Bytes in", "Bytes out"],
            [["all topics", num(m.messages_in), num(formatBytes(m.bytes_in)), num(formatBytes(m.bytes_out))],
             ...Object.entries(m.topics).map(([t, n]) => [t, num(n, "messages-in"), "", ""])]),
          failed.length ? h("p", {class: "bad"}, "Not answering: " + failed.map(([u, why]) => u + " (" + why + ")").join("; ")) : ""];
      }
      const sample = await getJSON("/api/offsets");
      if (previous) {
        const seconds = Math.max((sample.time_ms - previous.time_ms) / 1000, 0.001);
        const rates = {};
        let total = 0;
        for (const [topic, end] of Object.entries(sample.topics)) {
          const rate = Math.max(end - (previous.topics[topic] || 0), 0) / seconds;
          rates[topic] = rate;
          total += rate;
        }
        history.add(sample.time_ms, {"all topics": total, ...rates});
      }
      previous = sample;
      show(h("h1", {}, "Throughput"),
        h("p", {class: "muted"}, "Messages produced per second, from the growth of each topic's end offsets, sampled every " + POLL_MS / 1000 + " s."),
        lineChart(history.list().slice(0, COLORS.length), "messages/s"),
        table(["Topic", "End offsets (sum)"], Object.entries(sample.topics).map(([t, n]) => [link("/topic", {name: t}, t), num(n)])),
        ...(fromMetrics || []));
    });
  },
};

function card(label, value, bad) {
  return h("div", {class: "card"}, h("div", {class: "muted"}, label),
    h("div", {class: "big" + (bad ? " bad" : "")}, value === null || value === undefined ? "-" : value));
}

function partitionTable(partitions, withTopic) {
  return table([...(withTopic ? ["Topic"] : []), "Partition", "Leader", "Replicas", "ISR", "End offset", "Size", "Status"],
    partitions.map(p => [...(withTopic ? [link("/topic", {name: p.topic}, p.topic)] : []),
      num(p.partition), num(p.leader < 0 ? "none" : p.leader), ids(p.replicas),
      h("td", {class: "isr"}, ids(p.isr)), num(p.end_offset), num(formatBytes(p.size)),
      h("td", {class: p.leader < 0 || p.under_replicated ? "bad" : "good"},
        p.leader < 0 ? "offline" : p.under_replicated ? "under-replicated" : "in sync")]));
}

function partitionSelect(partitions, current) {
  return h("select", {name: "partition"}, partitions.map(p => {
    const option = h("option", {value: p.partition}, p.partition);
    if (String(p.partition) === current) option.selected = true;
    return option;
  }));
}

function decoded(d, inline) {
  const text = d.text === null ? "null" : d.text;
  const content = [h("span", {class: "tag"}, d.as), text];
  return inline ? h("span", {}, content) : h("td", {class: "value"}, content);
}

function produceForm(topic) {
  const input = h("input", {name: "value", size: 40, placeholder: "a test record's value"});
  const status = h("span", {class: "muted"});
  return h("div", {}, h("h2", {}, "Produce a test record"),
    h("form", {class: "inline", onsubmit: async event => {
      event.preventDefault();
      try {
        const r = await getJSON("/api/topics/" + encodeURIComponent(topic) + "/records",
          {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({value: input.value})});
        status.textContent = `written to partition ${r.partition} at offset ${r.offset}`;
      } catch (e) { status.textContent = e.message; }
    }}, input, h("button", {type: "submit"}, "Produce"), status));
}

(async function main() {
  const page = location.pathname.replace(/^\/+/, "") || "overview";
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === "/" + page || (page === "topic" && a.getAttribute("href") === "/topics")
        || (page === "group" && a.getAttribute("href") === "/groups")) a.classList.add("current");
  }
  try {
    const settings = await getJSON("/api/settings");
    document.getElementById("mode").textContent = settings.allow_writes ? "writes allowed" : "read-only";
    await pages[page](settings);
  } catch (e) {
    show(h("p", {class: "error"}, e.message));
  }
  if (page !== "group" && page !== "throughput") done();
})();
