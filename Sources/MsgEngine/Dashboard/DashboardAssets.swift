import MsgKit

/// The dashboard's two files: its style and its one script (no other asset, none
/// from elsewhere: the Content Security Policy allows only these).
enum DashboardAssets {
    static func file(_ name: String) -> WebResponse? {
        switch name {
        case "app.css": return WebResponse(status: 200, headers: [WebHeader("content-type", "text/css; charset=utf-8")], body: Array(css.utf8))
        case "app.js": return WebResponse(status: 200, headers: [WebHeader("content-type", "text/javascript; charset=utf-8")], body: Array(js.utf8))
        default: return nil
        }
    }

    static let css = """
    :root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #5b6470; --line: #d8dee4; --accent: #0b5cad; --sent: #2f9e44; --failed: #d9480f; }
    @media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #15181c; --muted: #9aa4ae; --line: #30363d; --accent: #6cb6ff; } }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
    header { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .5rem; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
    nav { display: flex; flex-wrap: wrap; gap: .9rem; }
    nav a { color: var(--accent); text-decoration: none; font-weight: 600; }
    .store { color: var(--muted); font-size: .85rem; overflow-wrap: anywhere; }
    main { padding: 1rem; max-width: 1200px; margin: 0 auto; }
    h1 { font-size: 1.4rem; margin: .2rem 0 1rem; }
    h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
    a { color: var(--accent); }
    .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(110px, 1fr)); gap: .6rem; }
    .card { display: flex; flex-direction: column; padding: .6rem .8rem; border: 1px solid var(--line); border-radius: 8px; text-decoration: none; color: inherit; }
    .figure { font-size: 1.5rem; font-weight: 700; font-variant-numeric: tabular-nums; }
    .label { color: var(--muted); font-size: .85rem; }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
    .facts { margin-top: 1rem; }
    .facts th { width: 13rem; color: var(--muted); font-weight: 500; }
    .list th a { text-decoration: none; white-space: nowrap; }
    .scroll { overflow-x: auto; }
    .id { font-family: ui-monospace, monospace; font-size: .85rem; }
    pre.body { white-space: pre-wrap; overflow-wrap: anywhere; padding: .7rem; border: 1px solid var(--line); border-radius: 6px; max-height: 30rem; overflow: auto; }
    .timeline { padding-left: 1.2rem; }
    .timeline li { margin: .25rem 0; overflow-wrap: anywhere; }
    .timeline time { font-family: ui-monospace, monospace; font-size: .85rem; color: var(--muted); }
    .event { font-weight: 600; }
    .error { color: var(--failed); }
    .extra { color: var(--muted); font-size: .85rem; }
    .filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: .8rem; }
    .filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
    input, select, button, .button { font: inherit; padding: .3rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
    button, .button { cursor: pointer; color: var(--accent); text-decoration: none; }
    form.action { display: flex; flex-wrap: wrap; gap: .3rem; margin: .2rem 0; }
    .list form.action input { width: 8rem; }
    .actions { margin: 1rem 0; }
    .chart svg { width: 100%; height: 160px; border: 1px solid var(--line); border-radius: 6px; }
    .chart .sent { fill: var(--sent); }
    .chart .failed { fill: var(--failed); }
    .chart .axis { stroke: var(--line); }
    figcaption { color: var(--muted); font-size: .85rem; }
    .pager { margin-top: .8rem; }
    @media (max-width: 600px) { main { padding: .6rem; } .facts th { width: auto; } th, td { padding: .3rem; font-size: .9rem; } }
    """

    static let js = """
    // msg web: the page updates itself. Every data-refresh seconds, while the page is
    // shown and nothing is being typed, it asks its own address again and puts the new
    // <main> in place of the old. The server's markup is the same as on a first load
    // (every string from a message is text); nothing is evaluated.
    (function () {
      "use strict";
      var seconds = parseInt(document.body.getAttribute("data-refresh"), 10) || 0;
      if (seconds <= 0) { return; }
      function busy() {
        var a = document.activeElement;
        if (a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA")) { return true; }
        var s = window.getSelection && window.getSelection();
        return !!(s && s.toString().length > 0);
      }
      function update() {
        if (document.visibilityState !== "visible" || busy()) { return; }
        fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
          .then(function (r) { return r.ok ? r.text() : null; })
          .then(function (text) {
            if (text === null || busy()) { return; }
            var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("main");
            var old = document.getElementById("main");
            if (fresh && old) { old.replaceWith(document.importNode(fresh, true)); }
            document.body.setAttribute("data-updated", String(Date.now()));
          })
          .catch(function () { /* the next tick tries again */ });
      }
      window.setInterval(update, seconds * 1000);
    })();
    """
}
