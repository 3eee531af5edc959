// Inspect's live view of a session (app/web/live.go): appends the output
// the server streams to <pre id="live"> as text, never as markup, and
// keeps #state current, until the session is done or the viewer may no
// longer read it. No build step.
(function () {
  "use strict";
  var pre = document.getElementById("live");
  var state = document.getElementById("state");
  if (!pre || !window.EventSource) {
    return;
  }
  var maxChars = 256 * 1024; // the page keeps a tail, as the server does
  var es = new EventSource(pre.getAttribute("data-src"));
  es.addEventListener("output", function (e) {
    var c = JSON.parse(e.data);
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.appendChild(document.createTextNode(c.text));
    while (pre.textContent.length > maxChars && pre.firstChild) {
      pre.removeChild(pre.firstChild);
    }
    if (atEnd) {
      pre.scrollTop = pre.scrollHeight;
    }
  });
  es.addEventListener("state", function (e) {
    var s = JSON.parse(e.data);
    if (state) {
      state.textContent = s.state + (s.outcome ? " · " + s.outcome : "");
      state.className = "badge " + s.state + " " + s.outcome;
    }
    var cancel = document.getElementById("cancel");
    if (cancel && s.state === "done") {
      cancel.disabled = true; // nothing left to cancel; Retry comes with a reload
    }
  });
  es.addEventListener("done", function () {
    es.close();
    pre.setAttribute("data-done", "true");
  });
  // The viewer's sign-in or read of the repository has gone: stop, and
  // say so; reconnecting would only be refused.
  es.addEventListener("ended", function (e) {
    es.close();
    var reason = JSON.parse(e.data).reason;
    pre.appendChild(document.createTextNode("\n[" + reason + "]\n"));
    pre.setAttribute("data-ended", "true");
  });
})();
