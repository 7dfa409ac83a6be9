// Preloaded with `node --require ./loopback.js ...`: every TCP server this Node process
// starts listens on 127.0.0.1 only, whatever host (or none) the program asked for.
// server-everything's Streamable HTTP mode calls `app.listen(PORT)`, which would bind all
// interfaces; the opkit tests must only ever listen on loopback.
"use strict";
const net = require("net");

const LOOPBACK = "127.0.0.1";
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    // listen(options[, callback]); a unix socket path (`path`) is left alone.
    if (first.path === undefined && first.handle === undefined && first.fd === undefined) {
      args[0] = { ...first, host: LOOPBACK, ipv6Only: false };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === "string") {
      args[1] = LOOPBACK;
    } else {
      args.splice(1, 0, LOOPBACK);
    }
  } else if (first === undefined || typeof first === "function") {
    // listen([callback]): a random port on all interfaces otherwise.
    args.unshift(0, LOOPBACK);
  }
  return listen.apply(this, args);
};
