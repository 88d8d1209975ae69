// The dashboard's behaviour (loaded as a file: the pages' CSP runs no inline script).
// 1. Live rows: every element with data-stream (the id="live-events" table bodies) opens
//    that server-sent event stream and puts each row it sends at the top (or, with
//    data-insert="beforeend", at the bottom).
// 2. Charts: every element with data-series (JSON columns: x in Unix seconds, then one
//    series) becomes a uPlot chart.
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
      while (body.rows.length > MAX_ROWS) {
        body.deleteRow(where === "afterbegin" ? body.rows.length - 1 : 0);
      }
      body.dispatchEvent(new CustomEvent("octopoda:live-row", { bubbles: true, detail: row }));
    });
  }

  function drawChart(el) {
    var data = JSON.parse(el.getAttribute("data-series"));
    if (!window.uPlot || !data.x || data.x.length === 0) {
      el.textContent = "No activity to chart yet.";
      return;
    }
    var opts = {
      width: Math.max(300, el.clientWidth || 600),
      height: 220,
      series: [{}, { label: el.getAttribute("data-label") || "value", stroke: "#1e88e5", width: 2 }],
      axes: [{}, {}]
    };
    new window.uPlot(opts, [data.x, data.operations], el);
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
