// Package hook is how the packages built on the root package waitingroom
// reach what they need of a room that is no natural public method of it,
// and no part of its public API: the room's own parts that applications
// have no use for.
//
//   - forwardauth (forwardauth.go): the forward-auth handler is built on
//     Room.Handler, as an application is, but it answers for a server in
//     front rather than serving the request: it reads the original request
//     from that server's headers only when it comes from one of the room's
//     TrustedProxies, it sets the room's cookie for the server to pass on,
//     and it gives admitted visitors passes, which the room must take as
//     signs of life of their sessions (and cap by the sessions' ends) and
//     which a revoke's hold must outlast.
//   - admin (admin.go): the kept history (the room's store, the minutes not
//     written yet), the waiting page a visitor would get under given
//     settings, for a template preview, and the room's clock and cookies'
//     Secure for the status page's sign-in.
//   - sim (sim.go): its instances' IDs, the same at every run: a fleet's
//     rounds take the instances in the order of their IDs, and a run
//     must repeat.
//
// Exported from the root, each of these would be part of every user's API
// for the sake of one package; here they stay inside the module.
//
// The root package sets every variable in an init, so they are set in any
// program that holds a room. They are keyed on a room, passed as any (a
// *waitingroom.Room: this package cannot name it, since the root imports
// it), or on the context of a request that Room.Handler passes on. Each
// is safe for concurrent use.
package hook
