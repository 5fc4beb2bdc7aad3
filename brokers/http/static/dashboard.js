/* zkafka live dashboard: polls GET /api/v1/overview every second and renders
 * brokers, topics, partitions (HW and LSO), transactions, client quotas, consumer groups and two uPlot charts.
 * Plain ES2020, no framework, no network besides same-origin fetches. */
(() => {
  "use strict";

  const API_URL = "/api/v1/overview";
  const POLL_INTERVAL_MS = 1000;
  const FETCH_TIMEOUT_MS = 5000;
  const MAX_POINTS = 300;
  const WINDOW_S = 300; // charts keep the last 5 minutes
  const PALETTE = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
  ];

  const $ = (sel) => document.querySelector(sel);

  // ---------------------------------------------------------------- helpers

  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };
  /** Escape anything for use in HTML text or a double-quoted attribute. */
  function esc(value) {
    if (value === null || value === undefined) return "";
    return String(value).replace(/[&<>"'`]/g, (c) => ESC[c]);
  }

  const isNum = (v) => typeof v === "number" && Number.isFinite(v);

  const UNKNOWN = '<span class="unknown" title="unknown">—</span>';

  function fmtInt(v) {
    return isNum(v) ? esc(v.toLocaleString("en-US")) : UNKNOWN;
  }

  function fmtBytes(v) {
    if (!isNum(v)) return UNKNOWN;
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let n = v;
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) {
      n /= 1024;
      i += 1;
    }
    const text = i === 0 ? `${n} B` : `${n.toFixed(n < 10 ? 2 : 1)} ${units[i]}`;
    return `<span title="${esc(v.toLocaleString("en-US"))} bytes">${esc(text)}</span>`;
  }

  function fmtRate(v) {
    if (v === null || v === undefined || !Number.isFinite(v)) return "—";
    return v >= 100 ? v.toFixed(0) : v.toFixed(1);
  }

  function fmtBroker(id) {
    return isNum(id) && id >= 0 ? esc(id) : '<span class="unknown">none</span>';
  }

  function fmtList(list) {
    return Array.isArray(list) ? esc(list.join(", ")) : UNKNOWN;
  }

  function fmtTime(ms) {
    if (!isNum(ms)) return "unknown";
    const d = new Date(ms);
    return d.toLocaleTimeString("en-GB", { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
  }

  /** "true"/"false" for data attributes. */
  const bool = (v) => (v ? "true" : "false");
  /** Numeric data attribute value; empty string when unknown. */
  const numAttr = (v) => (isNum(v) ? String(v) : "");

  function byName(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function setHtml(el, html) {
    if (el && el.innerHTML !== html) el.innerHTML = html;
  }

  function setText(el, text) {
    if (el && el.textContent !== text) el.textContent = text;
  }

  // ---------------------------------------------------------------- state

  let lastData = null;
  let lastOkAt = null;
  let prevSample = null; // {t, leo: Map, committed: Map}

  const throughput = { xs: [], ins: [], outs: [] };
  const lagHist = { xs: [], byGroup: new Map() }; // group id -> array aligned with xs

  let throughputChart = null;
  let lagChart = null;
  let lagChartKey = null; // joined group ids the lag chart was built with

  // ---------------------------------------------------------------- rendering

  function renderHeader(data) {
    const c = data.cluster || {};
    setText($("#cluster-id"), c.cluster_id != null ? String(c.cluster_id) : "unknown");
    const ctl = $("#controller");
    if (isNum(c.controller_id) && c.controller_id >= 0) {
      setText(ctl, `broker ${c.controller_id} (epoch ${isNum(c.controller_epoch) ? c.controller_epoch : "?"})`);
    } else {
      setText(ctl, `none (epoch ${isNum(c.controller_epoch) ? c.controller_epoch : "?"})`);
    }
    ctl.dataset.controllerId = numAttr(c.controller_id);
    ctl.dataset.controllerEpoch = numAttr(c.controller_epoch);
    setText($("#answered-by"), isNum(c.answered_by) ? `broker ${c.answered_by}` : "unknown");
    const lu = $("#last-update");
    setText(lu, fmtTime(isNum(c.time_ms) ? c.time_ms : Date.now()));
    lu.dataset.timeMs = numAttr(c.time_ms);
  }

  function renderBrokers(data) {
    const brokers = (data.brokers || []).slice().sort((a, b) => a.id - b.id);
    const controllerId = data.cluster ? data.cluster.controller_id : null;
    const rows = brokers.map((b) => {
      const alive = !!b.alive;
      const isController = !!b.controller || (isNum(controllerId) && b.id === controllerId);
      const hostPort = b.host != null ? `${b.host}:${b.port != null ? b.port : "?"}` : null;
      return (
        `<tr class="broker${alive ? "" : " down"}" data-broker-id="${esc(b.id)}" data-alive="${bool(alive)}">` +
        `<td class="id">${esc(b.id)}</td>` +
        `<td class="host">${hostPort != null ? esc(hostPort) : UNKNOWN}</td>` +
        `<td class="num">${b.http_port != null ? esc(b.http_port) : UNKNOWN}</td>` +
        `<td>${b.rack != null ? esc(b.rack) : UNKNOWN}</td>` +
        `<td class="status"><span class="status-text ${alive ? "up" : "down"}">${alive ? "up" : "down"}</span></td>` +
        `<td class="role">${isController ? '<span class="badge controller">controller</span>' : ""}</td>` +
        `</tr>`
      );
    });
    const html = rows.length ? rows.join("") : '<tr class="empty"><td colspan="6">No brokers</td></tr>';
    setHtml($("#brokers tbody"), html);
    const down = brokers.filter((b) => !b.alive).length;
    setText($("#brokers-count"), `${brokers.length} total, ${brokers.length - down} up, ${down} down`);
  }

  function internalTopicSet(data) {
    const set = new Set();
    for (const t of data.topics || []) if (t.internal) set.add(t.name);
    return set;
  }

  function renderTopics(data, showInternal) {
    const topics = (data.topics || []).slice().sort((a, b) => byName(a.name, b.name));
    const visible = topics.filter((t) => showInternal || !t.internal);
    const hidden = topics.length - visible.length;
    const rows = visible.map((t) => {
      const urp = t.under_replicated_partitions;
      const off = t.offline_partitions;
      const cls = ["topic"];
      if (t.internal) cls.push("internal");
      if (isNum(off) && off > 0) cls.push("offline");
      else if (isNum(urp) && urp > 0) cls.push("under-replicated");
      const configs = t.configs && typeof t.configs === "object"
        ? Object.keys(t.configs).sort().map((k) => `<span class="config">${esc(k)}=${esc(t.configs[k])}</span>`).join(" ")
        : "";
      return (
        `<tr class="${cls.join(" ")}" data-topic="${esc(t.name)}" data-internal="${bool(t.internal)}">` +
        `<td class="name">${esc(t.name)}${t.internal ? ' <span class="badge internal">internal</span>' : ""}</td>` +
        `<td class="num partitions">${fmtInt(t.partitions)}</td>` +
        `<td class="num rf">${fmtInt(t.replication_factor)}</td>` +
        `<td class="num urp${isNum(urp) && urp > 0 ? " warn" : ""}">${fmtInt(urp)}</td>` +
        `<td class="num offline-count${isNum(off) && off > 0 ? " bad" : ""}">${fmtInt(off)}</td>` +
        `<td class="num messages">${fmtInt(t.messages)}</td>` +
        `<td class="num size">${fmtBytes(t.size_bytes)}</td>` +
        `<td class="configs">${configs}</td>` +
        `</tr>`
      );
    });
    if (hidden > 0) {
      rows.push(
        `<tr class="internal-summary"><td colspan="8">${hidden} internal topic${hidden === 1 ? "" : "s"} hidden ` +
        `(tick “show internal topics” to list ${hidden === 1 ? "it" : "them"})</td></tr>`
      );
    }
    const html = rows.length ? rows.join("") : '<tr class="empty"><td colspan="8">No topics</td></tr>';
    setHtml($("#topics tbody"), html);
    setText($("#topics-count"), `${topics.length - hidden} shown${hidden ? `, ${hidden} internal hidden` : ""}`);
  }

  function renderPartitions(data, showInternal) {
    const internal = internalTopicSet(data);
    const parts = (data.partitions || [])
      .filter((p) => showInternal || !internal.has(p.topic))
      .sort((a, b) => byName(a.topic, b.topic) || a.partition - b.partition);
    const rows = parts.map((p) => {
      const urp = !!p.under_replicated;
      const off = !!p.offline;
      const cls = ["partition"];
      if (urp) cls.push("under-replicated");
      if (off) cls.push("offline");
      const isr = new Set(Array.isArray(p.isr) ? p.isr : []);
      const replicas = Array.isArray(p.replicas)
        ? p.replicas
            .map((r) => (isr.has(r) ? esc(r) : `<span class="out-of-isr" title="not in ISR">${esc(r)}</span>`))
            .join(", ")
        : UNKNOWN;
      const lsoLag = isNum(p.high_watermark) && isNum(p.last_stable_offset)
        ? Math.max(0, p.high_watermark - p.last_stable_offset) : null;
      return (
        `<tr class="${cls.join(" ")}" data-topic="${esc(p.topic)}" data-partition="${esc(p.partition)}" ` +
        `data-under-replicated="${bool(urp)}" data-offline="${bool(off)}" ` +
        `data-hw="${numAttr(p.high_watermark)}" data-lso="${numAttr(p.last_stable_offset)}">` +
        `<td class="topic-name">${esc(p.topic)}</td>` +
        `<td class="num">${esc(p.partition)}</td>` +
        `<td class="num leader">${fmtBroker(p.leader)}</td>` +
        `<td class="num">${fmtInt(p.leader_epoch)}</td>` +
        `<td class="replicas">${replicas}</td>` +
        `<td class="isr">${fmtList(p.isr)}</td>` +
        `<td class="num hw">${fmtInt(p.high_watermark)}</td>` +
        `<td class="num lso">${fmtInt(p.last_stable_offset)}</td>` +
        `<td class="num lso-lag${isNum(lsoLag) && lsoLag > 0 ? " lagging" : ""}">${fmtInt(lsoLag)}</td>` +
        `<td class="num leo">${fmtInt(p.log_end_offset)}</td>` +
        `<td class="num log-start">${fmtInt(p.log_start_offset)}</td>` +
        `<td class="num size">${fmtBytes(p.size_bytes)}</td>` +
        `<td class="num segments">${fmtInt(p.segments)}</td>` +
        `</tr>`
      );
    });
    const html = rows.length ? rows.join("") : '<tr class="empty"><td colspan="13">No partitions</td></tr>';
    setHtml($("#partitions tbody"), html);
  }

  const ONGOING_STATES = new Set(["Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"]);

  function renderTransactions(data) {
    const txns = (data.transactions || []).slice().sort((a, b) => byName(a.transactional_id, b.transactional_id));
    const rows = txns.map((t) => {
      const state = t.state != null ? String(t.state) : "Unknown";
      const ongoing = ONGOING_STATES.has(state);
      return (
        `<tr class="transaction${ongoing ? " ongoing" : ""}" data-transactional-id="${esc(t.transactional_id)}" ` +
        `data-state="${esc(state)}" data-ongoing="${bool(ongoing)}">` +
        `<td class="transactional-id">${esc(t.transactional_id)}</td>` +
        `<td class="num">${fmtBroker(t.coordinator)}</td>` +
        `<td class="num">${fmtInt(t.producer_id)}</td>` +
        `<td class="num">${fmtInt(t.producer_epoch)}</td>` +
        `<td class="state">${esc(state)}</td>` +
        `<td class="num">${fmtInt(t.timeout_ms)}</td>` +
        `<td>${isNum(t.start_time_ms) && t.start_time_ms >= 0 ? fmtTime(t.start_time_ms) : UNKNOWN}</td>` +
        `<td class="txn-partitions">${fmtList(t.partitions)}</td>` +
        `</tr>`
      );
    });
    const html = rows.length ? rows.join("") : '<tr class="empty"><td colspan="8">No transactions</td></tr>';
    setHtml($("#transactions tbody"), html);
    setText($("#transactions-count"), String(txns.length));
    setText($("#transactions-ongoing"), String(txns.filter((t) => ONGOING_STATES.has(String(t.state))).length));
  }

  // client quotas: data.quotas is null when the caller may not describe the cluster's configs
  const MAX_QUOTA_ROWS = 200;
  const QUOTA_KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"];

  /** A sensor's metric tag: "" means "not part of the measured entity" (every user, or every client id). */
  function fmtTag(v) {
    if (v !== "" && v != null) return esc(v);
    return '<span class="unknown" title="not part of the measured entity: all together">all</span>';
  }

  /** An entity part: null = not part of the entity, "<default>" = the default one. */
  function fmtEntityPart(v) {
    if (v == null) return '<span class="unknown" title="not part of the entity">—</span>';
    return v === "<default>" ? '<span class="badge default">default</span>' : esc(v);
  }

  function fmtQuotaValue(v, unit) {
    if (!isNum(v)) return UNKNOWN;
    if (unit === "bytes/s") return `${fmtBytes(v)}/s`;
    if (unit === "%") return `${esc(v.toFixed(1))} %`;
    if (unit === "mutations/s") return `${esc(fmtRate(v))}/s`;
    return esc(fmtRate(v));
  }

  function renderQuotaSensor(s) {
    const throttled = !!s.throttled_now;
    const tokens = s.metric === "tokens";
    const rate = tokens
      ? (isNum(s.tokens) ? `<span title="credits left">${esc(s.tokens.toFixed(1))} tokens</span>` : UNKNOWN)
      : fmtQuotaValue(s.rate, s.unit);
    const limit = isNum(s.limit) ? fmtQuotaValue(s.limit, s.limit_unit) : '<span class="unknown">unlimited</span>';
    const use = isNum(s.usage) ? `${(s.usage * 100).toFixed(0)} %` : null;
    return (
      `<tr class="quota-sensor${throttled ? " throttled" : ""}" data-broker="${esc(s.broker)}" ` +
      `data-quota-type="${esc(s.quota_type)}" data-user="${esc(s.user)}" data-client-id="${esc(s.client_id)}" ` +
      `data-throttled-now="${bool(throttled)}" data-rate="${numAttr(s.rate)}" data-limit="${numAttr(s.limit)}" ` +
      `data-throttle-ms="${numAttr(s.throttle_time_ms_total)}">` +
      `<td class="num">${fmtBroker(s.broker)}</td>` +
      `<td class="quota-type">${esc(s.quota_type)}</td>` +
      `<td class="user">${fmtTag(s.user)}</td>` +
      `<td class="client-id">${fmtTag(s.client_id)}</td>` +
      `<td class="num rate">${rate}</td>` +
      `<td class="num limit">${limit}</td>` +
      `<td class="num use${isNum(s.usage) && s.usage > 1 ? " over" : ""}">${use != null ? esc(use) : UNKNOWN}</td>` +
      `<td class="throttled-now">${throttled
        ? `<span class="badge throttled">throttled</span> ${fmtInt(s.throttle_remaining_ms)} ms left` : "no"}</td>` +
      `<td class="num throttle-ms">${fmtInt(s.throttle_time_ms_total)}</td>` +
      `<td class="num throttled-responses">${fmtInt(s.throttled_responses)}</td>` +
      `</tr>`
    );
  }

  function renderQuotas(data) {
    const q = data.quotas;
    const note = $("#quotas-note");
    if (!q || typeof q !== "object") {
      const why = q === null
        ? "Not shown: seeing client quotas needs DescribeConfigs on the cluster."
        : "This broker does not report client quotas.";
      setText(note, why);
      note.hidden = false;
      setHtml($("#quota-sensors tbody"), `<tr class="empty"><td colspan="10">${esc(why)}</td></tr>`);
      setHtml($("#quota-entities tbody"), `<tr class="empty"><td colspan="7">${esc(why)}</td></tr>`);
      setText($("#quotas-count"), "");
      setText($("#quotas-throttled"), "—");
      return;
    }
    const unanswered = Array.isArray(q.unanswered) ? q.unanswered : [];
    const silent = `Broker${unanswered.length === 1 ? "" : "s"} ${unanswered.join(", ")}`;
    setText(note, unanswered.length ? `${silent} did not answer: their clients are not shown.` : "");
    note.hidden = unanswered.length === 0;

    const sensors = Array.isArray(q.sensors) ? q.sensors : [];
    const shown = sensors.slice(0, MAX_QUOTA_ROWS).map(renderQuotaSensor);
    if (sensors.length > shown.length) {
      shown.push(`<tr class="internal-summary"><td colspan="10">${sensors.length - shown.length} more not shown ` +
        `(<code>GET /api/v1/quotas?scope=cluster</code> lists them all)</td></tr>`);
    }
    setHtml($("#quota-sensors tbody"), shown.length ? shown.join("")
      : '<tr class="empty"><td colspan="10">No client measured (no quota configured, or no request yet)</td></tr>');

    const entities = Array.isArray(q.entities) ? q.entities : [];
    const entityRows = entities.map((e) => {
      const quotas = e.quotas || {};
      return (
        `<tr class="quota-entity" data-user="${esc(e.user == null ? "" : e.user)}" ` +
        `data-client-id="${esc(e.client_id == null ? "" : e.client_id)}" ` +
        `data-quotas="${esc(JSON.stringify(quotas))}">` +
        `<td class="user">${fmtEntityPart(e.user)}</td>` +
        `<td class="client-id">${fmtEntityPart(e.client_id)}</td>` +
        QUOTA_KEYS.map((k) => `<td class="num ${esc(k)}">` +
          `${isNum(quotas[k]) ? esc(quotas[k].toLocaleString("en-US")) : ""}</td>`).join("") +
        `<td class="brokers">${fmtList(e.brokers)}</td>` +
        `</tr>`
      );
    });
    setHtml($("#quota-entities tbody"), entityRows.length ? entityRows.join("")
      : '<tr class="empty"><td colspan="7">No client quota configured</td></tr>');
    const throttledNow = isNum(q.throttled_now) ? q.throttled_now : sensors.filter((s) => s.throttled_now).length;
    setText($("#quotas-count"), `${entities.length} configured, ${sensors.length} measured`);
    setText($("#quotas-throttled"), String(throttledNow));
  }

  function fmtAssignment(assignment) {
    if (!Array.isArray(assignment) || assignment.length === 0) return '<span class="unknown">none</span>';
    return assignment
      .map((a) => `${esc(a.topic)}[${esc((a.partitions || []).join(","))}]`)
      .join(" ");
  }

  function renderGroups(data) {
    const groups = (data.groups || []).slice().sort((a, b) => byName(a.group_id, b.group_id));
    const html = groups.map((g) => {
      const members = g.members || [];
      const offsets = (g.offsets || []).slice().sort((a, b) => byName(a.topic, b.topic) || a.partition - b.partition);
      const memberRows = members.length
        ? members.map((m) =>
            `<tr class="member" data-member-id="${esc(m.member_id)}">` +
            `<td class="member-id" title="${esc(m.member_id)}">${esc(m.member_id)}</td>` +
            `<td>${esc(m.client_id)}</td>` +
            `<td>${esc(m.client_host)}</td>` +
            `<td>${m.group_instance_id != null ? esc(m.group_instance_id) : UNKNOWN}</td>` +
            `<td class="assignment">${fmtAssignment(m.assignment)}</td>` +
            `</tr>`).join("")
        : '<tr class="empty"><td colspan="5">No members</td></tr>';
      const offsetRows = offsets.length
        ? offsets.map((o) =>
            `<tr class="group-offset${isNum(o.lag) && o.lag > 0 ? " lagging" : ""}" data-topic="${esc(o.topic)}" ` +
            `data-partition="${esc(o.partition)}" data-lag="${numAttr(o.lag)}">` +
            `<td>${esc(o.topic)}</td>` +
            `<td class="num">${esc(o.partition)}</td>` +
            `<td class="num">${fmtInt(o.committed_offset)}</td>` +
            `<td class="num">${fmtInt(o.high_watermark)}</td>` +
            `<td class="num lag">${fmtInt(o.lag)}</td>` +
            `</tr>`).join("")
        : '<tr class="empty"><td colspan="5">No committed offsets</td></tr>';
      const state = g.state != null ? String(g.state) : "Unknown";
      const stateCls = state.toLowerCase().replace(/[^a-z0-9]+/g, "-");
      return (
        `<div class="group" data-group-id="${esc(g.group_id)}" data-state="${esc(state)}" data-total-lag="${numAttr(g.total_lag)}">` +
        `<div class="group-head">` +
        `<h3 class="group-id">${esc(g.group_id)}</h3>` +
        `<span class="badge state state-${esc(stateCls)}">${esc(state)}</span>` +
        `</div>` +
        `<dl class="group-info">` +
        `<div><dt>Protocol</dt><dd>${esc(g.protocol_type || "")}${g.protocol ? " / " + esc(g.protocol) : ""}</dd></div>` +
        `<div><dt>Generation</dt><dd>${fmtInt(g.generation)}</dd></div>` +
        `<div><dt>Coordinator</dt><dd>${fmtBroker(g.coordinator)}</dd></div>` +
        `<div><dt>Members</dt><dd>${members.length}</dd></div>` +
        `<div><dt>Total lag</dt><dd class="total-lag">${fmtInt(g.total_lag)}</dd></div>` +
        `</dl>` +
        `<div class="group-tables">` +
        `<div class="table-wrap"><table class="members"><thead><tr>` +
        `<th>Member id</th><th>Client id</th><th>Host</th><th>Instance id</th><th>Assignment</th>` +
        `</tr></thead><tbody>${memberRows}</tbody></table></div>` +
        `<div class="table-wrap"><table class="group-offsets"><thead><tr>` +
        `<th>Topic</th><th class="num">Partition</th><th class="num">Committed</th><th class="num">HW</th><th class="num">Lag</th>` +
        `</tr></thead><tbody>${offsetRows}</tbody></table></div>` +
        `</div>` +
        `</div>`
      );
    }).join("");
    setHtml($("#groups"), html || '<p class="empty">No consumer groups</p>');
    setText($("#groups-count"), String(groups.length));
  }

  function renderAll() {
    if (!lastData) return;
    const showInternal = $("#show-internal").checked;
    const steps = [
      () => renderHeader(lastData),
      () => renderBrokers(lastData),
      () => renderTopics(lastData, showInternal),
      () => renderPartitions(lastData, showInternal),
      () => renderTransactions(lastData),
      () => renderQuotas(lastData),
      () => renderGroups(lastData),
    ];
    for (const step of steps) {
      try {
        step();
      } catch (err) {
        console.error("dashboard: render failed", err);
      }
    }
  }

  // ---------------------------------------------------------------- metrics

  function takeSample(data) {
    const internal = internalTopicSet(data);
    const leo = new Map();
    for (const p of data.partitions || []) {
      if (internal.has(p.topic) || !isNum(p.log_end_offset)) continue;
      leo.set(`${p.topic}\u0000${p.partition}`, p.log_end_offset);
    }
    const committed = new Map();
    for (const g of data.groups || []) {
      for (const o of g.offsets || []) {
        if (!isNum(o.committed_offset)) continue;
        committed.set(`${g.group_id}\u0000${o.topic}\u0000${o.partition}`, o.committed_offset);
      }
    }
    const c = data.cluster || {};
    return { t: isNum(c.time_ms) ? c.time_ms : Date.now(), leo, committed };
  }

  /** Sum of per-key deltas over keys present (non-null) in both samples. */
  function deltaSum(prev, cur) {
    let sum = 0;
    for (const [k, v] of cur) {
      const p = prev.get(k);
      if (p !== undefined) sum += v - p;
    }
    return sum;
  }

  function trim(xs, arrays) {
    let drop = 0;
    if (xs.length > MAX_POINTS) drop = xs.length - MAX_POINTS;
    const newest = xs[xs.length - 1];
    while (drop < xs.length && newest - xs[drop] > WINDOW_S) drop += 1;
    if (drop > 0) {
      xs.splice(0, drop);
      for (const a of arrays) a.splice(0, drop);
    }
  }

  function recordMetrics(data) {
    const sample = takeSample(data);
    const x = sample.t / 1000;

    // (a) throughput: needs two samples
    if (prevSample && sample.t > prevSample.t) {
      const dt = (sample.t - prevSample.t) / 1000;
      const inRate = Math.max(0, deltaSum(prevSample.leo, sample.leo) / dt);
      const outRate = Math.max(0, deltaSum(prevSample.committed, sample.committed) / dt);
      throughput.xs.push(x);
      throughput.ins.push(inRate);
      throughput.outs.push(outRate);
      trim(throughput.xs, [throughput.ins, throughput.outs]);
    }
    if (!prevSample || sample.t > prevSample.t) prevSample = sample;

    // (b) total lag per group
    const last = lagHist.xs[lagHist.xs.length - 1];
    if (last === undefined || x > last) {
      const n = lagHist.xs.length;
      lagHist.xs.push(x);
      const seen = new Set();
      for (const g of data.groups || []) {
        const id = String(g.group_id);
        seen.add(id);
        let arr = lagHist.byGroup.get(id);
        if (!arr) {
          arr = new Array(n).fill(null);
          lagHist.byGroup.set(id, arr);
        }
        arr.push(isNum(g.total_lag) ? g.total_lag : null);
      }
      for (const [id, arr] of lagHist.byGroup) if (!seen.has(id)) arr.push(null);
      trim(lagHist.xs, Array.from(lagHist.byGroup.values()));
      for (const [id, arr] of lagHist.byGroup) {
        if (arr.every((v) => v === null)) lagHist.byGroup.delete(id);
      }
    }
  }

  // ---------------------------------------------------------------- charts

  function chartWidth(el) {
    return Math.max(280, Math.floor(el.clientWidth || 600));
  }

  const CHART_HEIGHT = 240;

  function baseOpts(el, yLabel) {
    return {
      width: chartWidth(el),
      height: CHART_HEIGHT,
      scales: { x: { time: true, range: (u, min, max) => (min === max ? [min - 60, max + 1] : [min, max]) }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: "#444", grid: { stroke: "#eee" }, ticks: { stroke: "#ddd" } },
        { label: yLabel, stroke: "#444", grid: { stroke: "#eee" }, ticks: { stroke: "#ddd" }, size: 60 },
      ],
      cursor: { drag: { x: false, y: false } },
    };
  }

  function updateThroughputChart() {
    if (typeof window.uPlot !== "function") return;
    const el = $("#chart-throughput");
    const data = [throughput.xs, throughput.ins, throughput.outs];
    if (!throughputChart) {
      const opts = baseOpts(el, "msg/s");
      opts.series = [
        {},
        { label: "messages in/s", stroke: PALETTE[0], width: 2, fill: "rgba(31,119,180,0.08)", value: (u, v) => fmtRate(v) },
        { label: "messages out/s", stroke: PALETTE[1], width: 2, value: (u, v) => fmtRate(v) },
      ];
      throughputChart = new window.uPlot(opts, data, el);
    } else {
      throughputChart.setData(data);
    }
  }

  function updateLagChart() {
    if (typeof window.uPlot !== "function") return;
    const el = $("#chart-lag");
    const ids = Array.from(lagHist.byGroup.keys()).sort(byName);
    const key = JSON.stringify(ids);
    const data = [lagHist.xs, ...ids.map((id) => lagHist.byGroup.get(id))];
    if (!lagChart || key !== lagChartKey) {
      if (lagChart) lagChart.destroy();
      const opts = baseOpts(el, "messages");
      opts.series = [{}].concat(ids.map((id, i) => ({
        label: id, // uPlot sets legend labels via textContent
        stroke: PALETTE[i % PALETTE.length],
        width: 2,
        spanGaps: false,
        value: (u, v) => (v === null || v === undefined ? "—" : v.toLocaleString("en-US")),
      })));
      lagChart = new window.uPlot(opts, data, el);
      lagChartKey = key;
      el.dataset.series = String(ids.length);
    } else {
      lagChart.setData(data);
    }
  }

  function updateCharts() {
    try {
      updateThroughputChart();
    } catch (err) {
      console.error("dashboard: throughput chart failed", err);
    }
    try {
      updateLagChart();
    } catch (err) {
      console.error("dashboard: lag chart failed", err);
    }
  }

  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (throughputChart) throughputChart.setSize({ width: chartWidth($("#chart-throughput")), height: CHART_HEIGHT });
      if (lagChart) lagChart.setSize({ width: chartWidth($("#chart-lag")), height: CHART_HEIGHT });
    }, 150);
  });

  // ---------------------------------------------------------------- polling

  function setConnectionLost(lost, message) {
    const banner = $("#connection-lost");
    banner.hidden = !lost;
    document.body.classList.toggle("stale", lost);
    if (lost) {
      const since = lastOkAt ? ` Last successful update at ${fmtTime(lastOkAt)}.` : "";
      setText($("#connection-error"), `(${message}).${since}`);
    }
  }

  async function fetchOverview() {
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), FETCH_TIMEOUT_MS);
    try {
      const resp = await fetch(API_URL, {
        cache: "no-store",
        headers: { Accept: "application/json" },
        signal: ctrl.signal,
      });
      if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
      const data = await resp.json();
      if (!data || typeof data !== "object") throw new Error("bad response");
      return data;
    } finally {
      clearTimeout(timer);
    }
  }

  async function poll() {
    try {
      const data = await fetchOverview();
      lastData = data;
      lastOkAt = data.cluster && isNum(data.cluster.time_ms) ? data.cluster.time_ms : Date.now();
      setConnectionLost(false);
      try {
        recordMetrics(data);
      } catch (err) {
        console.error("dashboard: metrics failed", err);
      }
      renderAll();
      updateCharts();
    } catch (err) {
      const msg = err && err.name === "AbortError" ? "request timed out" : String((err && err.message) || err);
      setConnectionLost(true, msg);
    } finally {
      setTimeout(poll, POLL_INTERVAL_MS);
    }
  }

  $("#show-internal").addEventListener("change", renderAll);
  poll();
})();
