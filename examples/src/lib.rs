//! Support code shared by the runnable demos and the kubectl interop tests: a throw-away
//! certificate authority and a small blocking HTTPS server on loopback.
