package admin

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"strconv"
	"time"
)

// adminPageSource is the status page's template: HTML with its script and
// style inline.
//
//go:embed status.html
var adminPageSource string

// adminPage is adminPageSource, parsed.
var adminPage = template.Must(template.New("status").Parse(adminPageSource))

// pageData is what the status page template gets.
type pageData struct {
	Nonce    string
	Status   adminStatus
	Outflow  string
	Wait     string
	LastSync string
	// Base starts the links to the other resources (relBase).
	Base string
	// Session: the page was asked for with a session cookie (SignIn),
	// and offers to sign out.
	Session bool
}

// page serves the status page, its script and style allowed by a
// nonce of the response's own; session says that r was authenticated by
// a session cookie.
func (a *admin) page(w http.ResponseWriter, r *http.Request, session bool) {
	var n [16]byte
	_, _ = rand.Read(n[:])
	st := a.status()
	d := pageData{
		Nonce:    hex.EncodeToString(n[:]),
		Status:   st,
		Outflow:  strconv.FormatFloat(st.OutflowPerMinute, 'f', 1, 64),
		Wait:     st.EstimatedWait.Formatted,
		LastSync: "never",
		Base:     relBase(r),
		Session:  session,
	}
	switch {
	case st.EstimatedWait.Full:
		d.Wait = "more than a day"
	case !st.EstimatedWait.Known:
		d.Wait = "unknown"
	}
	if st.LastSync != nil {
		d.LastSync = st.LastSync.Format(time.RFC3339)
	}
	var buf bytes.Buffer
	if err := adminPage.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "waitingroom: rendering the status page failed")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
