// Package browser holds tests that drive Chromium through the waiting
// page: a queued visitor's page refreshes itself, keeps its cookie and
// reaches the application, also inside an iframe on another site over
// HTTPS and with JavaScript disabled; with JavaScript the page updates
// itself in place from its JSON; the proof of work passes inside an
// iframe on another site over HTTPS, and a visitor without JavaScript
// reads that the page needs it; an iframe on another site over plain HTTP
// says that it cannot keep the visitor's place and links to a tab of its
// own; where admission is a draw, the section that gives what checks it;
// screenshots of the default page; the admin status page, its
// history, and signing in to it through its form.
//
// The tests need Chromium at /usr/bin/chromium (Debian: apt-get install -y
// chromium). Without it they skip, unless WAITINGROOM_REQUIRE_SERVICES=1,
// when they fail. Screenshots go to the directory named by
// WAITINGROOM_SCREENSHOTS (default: a temporary directory):
//
//	WAITINGROOM_SCREENSHOTS=$PWD/../docs/img/screens go test -run 'Screenshots|Admin' ./browser
package browser
