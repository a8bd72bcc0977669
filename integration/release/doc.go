// Package release holds the compatibility test of a release with the
// previous one (docs/releasing.md, "Compatibility"). TestPrevious reads
// the previous release and the commit it was cut from in the table of
// releases of docs/releasing.md, builds cmd/waitingroom from that commit
// (the repository's own history, with the old tree's go.work) and from
// the checkout, and runs the two side by side on one Redis, as a rolling
// upgrade and as a rollback do: a visitor let in by one is let in by the
// other with its cookie, not counted again, a waiting visitor keeps its
// place, and neither refuses the state the other writes.
//
// It skips with a message when Redis is unreachable or the commit is not
// in the clone (a shallow one), and fails instead when
// WAITINGROOM_REQUIRE_SERVICES=1 (see internal/servicetest). It takes
// about 15 seconds, most of it the builds, once the build cache holds the
// old tree's packages (built with -trimpath, so that they are found
// again); the first run compiles them. go test -short skips it.
package release
