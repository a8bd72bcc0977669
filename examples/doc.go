// Package examples holds runnable programs that show waitingroom with the
// frameworks and tools Go developers use. It is its own module, so their
// dependencies (web frameworks, plotting, a headless browser driver) never
// reach the library's go.mod.
package examples
