// The dashboard's behaviour (loaded as a file: the pages' CSP runs no inline script).
// 1. Live rows: every element with data-stream (the id="live-events" table bodies) opens
//    that server-sent event stream and puts each row it sends at the top (or, with
//    data-insert="beforeend", at the bottom); a loop verdict's row marks its loop's rows.
// 2. Charts: every element with data-series (JSON columns: x in Unix seconds, then one
//    series named by data-key) becomes a uPlot chart.
(function () {
  "use strict";
  var MAX_ROWS = 500;

  function startLive(body) {
    if (!window.EventSource) { return; }
    var where = body.getAttribute("data-insert") || "afterbegin";
    var source = new EventSource(body.getAttribute("data-stream"));
    source.addEventListener("row", function (msg) {
      var tmp = document.createElement("tbody");
      tmp.innerHTML = msg.data;
      var row = tmp.firstElementChild;
      if (!row || (row.id && document.getElementById(row.id))) { return; }
      row.classList.add("live-new");
      body.insertAdjacentElement(where, row);
      markLoop(body, row);
      while (body.rows.length > MAX_ROWS) {
        body.deleteRow(where === "afterbegin" ? body.rows.length - 1 : 0);
      }
      body.dispatchEvent(new CustomEvent("octopoda:live-row", { bubbles: true, detail: row }));
    });
  }

  // A loop verdict names the events of its loop: mark those rows (class loop-call), as the
  // server does on a page it renders.
  function markLoop(body, verdict) {
    var seqs = (verdict.getAttribute("data-loop-seqs") || "").split(" ");
    var agent = verdict.getAttribute("data-agent");
    seqs.forEach(function (seq) {
      if (!seq) { return; }
      body.querySelectorAll('tr[data-seq="' + seq + '"]').forEach(function (tr) {
        if (agent && tr.getAttribute("data-agent") !== agent) { return; }
        tr.classList.add("loop-call");
      });
    });
  }

  function drawChart(el) {
    var data = JSON.parse(el.getAttribute("data-series"));
    if (!window.uPlot || !data.x || data.x.length === 0) {
      el.textContent = "No activity to chart yet.";
      return;
    }
    var series = { label: el.getAttribute("data-label") || "value", stroke: "#1e88e5", width: 2 };
    if (el.hasAttribute("data-points")) {  // separate measurements: dots, no line
      series.paths = function () { return null; };
      series.points = { show: true, size: 6, fill: "#1e88e5" };
    }
    var opts = {
      width: Math.max(300, el.clientWidth || 600),
      height: 220,
      scales: { y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      series: [{}, series],
      axes: [{}, {}]
    };
    var key = el.getAttribute("data-key") || "operations";
    new window.uPlot(opts, [data.x, data[key]], el);
  }

  function start() {
    document.querySelectorAll("[data-stream]").forEach(startLive);
    document.querySelectorAll("[data-series]").forEach(drawChart);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
