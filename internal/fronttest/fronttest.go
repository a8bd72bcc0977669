// Package fronttest is what the tests of package forwardauth and of the
// root package (which cannot import forwardauth) know of the servers in
// front of the room: the passes as the documented nginx configuration
// checks them (docs/forward-auth/nginx.md), and the forwarding headers a
// visitor forges.
package fronttest

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
)

// PassSecret is the tests' pass secret.
const PassSecret = "pass-secret-0123456789abcdef"

// ForgedForwarding is what a visitor adds to get past the room: every
// forwarding header, each naming what a bypass rule lets through (a path
// under /static/, OPTIONS, the network 10.0.0.0/8, the host
// static.example), each family twice over (a second value could hide
// behind a server's).
var ForgedForwarding = http.Header{
	"X-Forwarded-Method": {"OPTIONS", "OPTIONS"},
	"X-Forwarded-Uri":    {"/static/x.css", "/static/y.css"},
	"X-Forwarded-Host":   {"static.example"},
	"X-Forwarded-Proto":  {"https"},
	"X-Forwarded-For":    {"10.0.0.1"},
	"X-Forwarded-Prefix": {"/static"},
	"X-Forwarded-Path":   {"/static/x.css"},
	"X-Original-Method":  {"OPTIONS"},
	"X-Original-Uri":     {"/static/x.css"},
	"X-Original-Url":     {"https://static.example/static/x.css", "https://static.example/static/y.css"},
	"X-Rewrite-Url":      {"/static/x.css"},
	"Forwarded":          {"for=10.0.0.1;host=static.example;proto=https"},
	"X-Real-Ip":          {"10.0.0.1"},
	"X-Client-Ip":        {"10.0.0.1"},
}

// The regular expressions of docs/forward-auth/nginx.md's maps.
var (
	linkRE   = regexp.MustCompile(`^([A-Za-z0-9_-]{22})\.([0-9]{1,12})_`)
	dataRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{22}\.([0-9]{1,12}_[0-9a-f]{16}_[0-9TZ:.-]{20,32}_[0-9TZ:.-]{20,32})$`)
	ticketRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}\.[0-9]{1,12}_([0-9a-f]{16})_([0-9TZ:.-]{20,32})_([0-9TZ:.-]{20,32})$`)
)

// CheckPass checks the value of a pass cookie as the documented
// configuration has nginx check it at Unix second now: the maps, then
// secure_link (the base64url MD5 of "$data <cookie name> <secret>", and
// the expiry second not past), for the room of cookie name. It returns
// the ticket nginx gives the application.
func CheckPass(value, name, secret string, now int64) (ticket string, ok bool) {
	link, data, tk := linkRE.FindStringSubmatch(value), dataRE.FindStringSubmatch(value), ticketRE.FindStringSubmatch(value)
	if link == nil || data == nil || tk == nil {
		return "", false
	}
	sig, err := base64.RawURLEncoding.DecodeString(link[1])
	if err != nil || len(sig) != md5.Size {
		return "", false
	}
	want := md5.Sum([]byte(data[1] + " " + name + " " + secret))
	expires, err := strconv.ParseInt(link[2], 10, 64)
	if err != nil || !bytes.Equal(sig, want[:]) || expires < now {
		return "", false
	}
	return "id=" + tk[1] + "; bucket=" + tk[2] + "; accepted=" + tk[3], true
}

// PassLast returns the last Unix second through which the pass value is
// good, as nginx reads it; ok is false for a value nginx does not read.
func PassLast(value string) (last int64, ok bool) {
	m := linkRE.FindStringSubmatch(value)
	if m == nil {
		return 0, false
	}
	last, err := strconv.ParseInt(m[2], 10, 64)
	return last, err == nil
}
