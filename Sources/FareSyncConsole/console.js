// The console's script: dates in the reader's time zone, and the live parts. A page names its
// Server-Sent Events stream in <body data-stream>; on "changed" it fetches its live part again
// (?part=live, at most once a second); the change feed page adds each "change" as a row.
(function () {
  "use strict";

  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (element) {
      var date = new Date(element.getAttribute("datetime"));
      if (!isNaN(date.getTime())) element.textContent = date.toLocaleString();
    });
  }

  localTimes(document);
  var url = document.body.getAttribute("data-stream");
  if (!url || !window.EventSource) return;
  var status = document.getElementById("live-status");
  var fetching = false;
  var fetches = 0;
  var again = false;
  var lastFetch = 0;

  function refresh() {
    if (!document.getElementById("live")) return;
    if (fetching) { again = true; return; }
    fetching = true;
    var wait = Math.max(0, 1000 - (Date.now() - lastFetch));
    setTimeout(function () {
      var target = new URL(window.location.href);
      target.searchParams.set("part", "live");
      fetch(target, { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          lastFetch = Date.now();
          var live = document.getElementById("live");
          if (html !== null && live) {
            var holder = document.createElement("div");
            holder.innerHTML = html;
            var fresh = holder.querySelector("#live");
            if (fresh) {
              live.replaceWith(fresh);
              localTimes(fresh);
            }
          }
        })
        .catch(function () {})
        .then(function () {
          fetching = false;
          // How many times the live part was fetched: a test waits for the one after the stream opened.
          document.body.setAttribute("data-live-fetches", String(++fetches));
          if (again) { again = false; refresh(); }
        });
    }, wait);
  }

  var rows = document.getElementById("feed-rows");
  var pauseButton = document.getElementById("feed-pause");
  var feedState = document.getElementById("feed-state");
  var paused = false;
  var held = [];
  var maxRows = 500;

  function addRow(change) {
    var row = document.createElement("tr");
    [String(change.position), change.operation, change.path].forEach(function (text, index) {
      var cell = document.createElement("td");
      cell.textContent = text;
      if (index === 0) cell.className = "num";
      row.appendChild(cell);
    });
    row.className = change.operation === "delete" ? "deleted" : "";
    rows.insertBefore(row, rows.firstChild);
    while (rows.children.length > maxRows) rows.removeChild(rows.lastChild);
  }

  if (pauseButton) {
    pauseButton.addEventListener("click", function () {
      paused = !paused;
      pauseButton.setAttribute("aria-pressed", paused ? "true" : "false");
      pauseButton.textContent = paused ? "Resume" : "Pause";
      if (!paused) {
        held.forEach(addRow);
        held = [];
      }
      feedState.textContent = paused ? "Paused: new changes wait until you resume." : "Following the feed.";
    });
  }

  // A stream the server refused (503: too many live pages open) is closed for good by the browser:
  // open a new one a little later.
  function connect() {
    var source = new EventSource(url);
    source.addEventListener("open", function () {
      document.body.setAttribute("data-stream-state", "open");
      if (status) status.textContent = "";
      // What changed between the page's rendering and the stream's start (or while it reconnected)
      // came before the stream: fetch the live part once.
      refresh();
    });
    source.addEventListener("error", function () {
      document.body.setAttribute("data-stream-state", "reconnecting");
      if (status) status.textContent = "Live updates paused: reconnecting…";
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 10000);
    });
    listen(source);
  }

  function listen(source) {
    source.addEventListener("changed", refresh);
    source.addEventListener("change", function (event) {
      if (!rows) return;
      var change = JSON.parse(event.data);
      if (paused) {
        held.push(change);
        feedState.textContent = "Paused: " + held.length + " new changes wait until you resume.";
      } else {
        addRow(change);
      }
    });
    source.addEventListener("skipped", function (event) {
      if (!rows) return;
      var gap = JSON.parse(event.data);
      addRow({ position: gap.to, operation: "skipped", path: "(changes " + gap.from + "–" + gap.to + " came too fast to list)" });
    });
  }

  connect();
})();
