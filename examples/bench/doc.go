// Package bench measures what a waiting room costs a request, next to the
// bare application and next to two middlewares of the kind Go services
// already run on every request: gorilla/securecookie sessions and
// go-chi/httprate rate limiting. It holds benchmarks only.
//
// Every case serves the same application (a 12-byte body) through
// httptest, reusing one request and making a new ResponseRecorder per
// operation, so the differences are the middleware's own cost. On a busy
// machine, alternate the cases (ten runs of all of them, rather than ten of
// each in a row) and compare within the runs:
//
//	cd examples
//	go test -c -o /tmp/bench.test ./bench/
//	for i in $(seq 10); do /tmp/bench.test -test.run '^$' -test.bench .; done | tee bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /h bench.txt
//
// The /h= part of each name says what stands in front of the application;
// -col /h makes benchstat compare every case with h=bare. Everything runs
// on the real clock, and the admitted cases cycle through a crowd of 1,000
// visitors who keep the cookies they are given, so the room's work that
// comes once a second or once a minute (a visitor's sign of life, the
// re-issue of their cookie, the turnover of the room's memory of opened
// cookies, the background sync) is in every run in proportion to the
// requests, as in production.
package bench
