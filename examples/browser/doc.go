// Package browser holds tests that drive Chromium through the waiting
// page: a queued visitor's page refreshes itself, keeps its cookie and
// reaches the application, also inside an iframe on another site over
// HTTPS and with JavaScript disabled; and screenshots of the default page.
//
// The tests need Chromium at /usr/bin/chromium (Debian: apt-get install -y
// chromium). Without it they skip, unless WAITINGROOM_REQUIRE_SERVICES=1,
// when they fail. Screenshots go to the directory named by
// WAITINGROOM_SCREENSHOTS (default: a temporary directory):
//
//	WAITINGROOM_SCREENSHOTS=$PWD/../docs/img/screens go test -run Screenshots ./browser
package browser
