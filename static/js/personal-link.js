// An open link's first page: put the worker's personal link (the same address with its key)
// in the address bar, so that a reload or a bookmark comes back as this worker. The server
// gives the link only to the request that proved the id was free (arrival_verify).
(function () {
  "use strict";
  var meta = document.querySelector("meta[name=evalsite-personal-link]");
  if (meta && window.history && window.history.replaceState) {
    window.history.replaceState(window.history.state, "", meta.content);
  }
})();
