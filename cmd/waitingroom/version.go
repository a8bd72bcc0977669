package main

import (
	"runtime/debug"
	"strings"
)

// versionLine is what -version prints, from the build's information
// (debug.ReadBuildInfo): the module's version, as go install pkg@version
// records it ("(devel)" for a build of a checkout, or the version the go
// command derived from the repository's tags), then, when the build
// recorded them, the commit it was built from, its time and whether the
// checkout had changes, and the Go version:
//
//	waitingroom v1.4.0 go1.26.0
//	waitingroom (devel) commit 79c1e24f0a3c… 2026-12-04T07:58:16Z modified go1.26.0
func versionLine(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "waitingroom (unknown version: built without module information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	parts := []string{"waitingroom", version}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "commit", rev)
		if t := settings["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
		if settings["vcs.modified"] == "true" {
			parts = append(parts, "modified")
		}
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return strings.Join(parts, " ")
}
