package admin

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"net/url"
)

// previewPageSource is the preview page's template: the waiting page in
// each state, framed, under the warnings of the template's unknown names.
//
//go:embed preview.html
var previewPageSource string

// previewPageTmpl is previewPageSource, parsed.
var previewPageTmpl = template.Must(template.New("preview").Parse(previewPageSource))

// previewLabels are the headings of the states on the preview page.
var previewLabels = map[PreviewState]string{
	PreviewQueueing:      "Queueing",
	PreviewQueueAll:      "Queue all",
	PreviewEventPrequeue: "Event pre-queue",
	PreviewReject:        "Reject (closed)",
	PreviewUnknownWait:   "Unknown wait",
}

// previewPageData is what the preview page template gets.
type previewPageData struct {
	Nonce, Room, Language string
	// Unknown are the names the template uses that no page fills, each
	// once (unknownNames); UnknownTitle heads their list.
	Unknown      []string
	UnknownTitle string
	States       []previewPageState
}

// previewPageState is one state on the preview page.
type previewPageState struct {
	State, Label string
	Status       int
	// Src is the state's page (GET /preview?state=), relative to the
	// preview page.
	Src   string
	Error string
}

// previewPage answers a browser's GET /preview: a page of the live
// template's pages in every state, each in a sandboxed frame that loads
// it from GET /preview?state=, under a list of the names the template
// uses that no page fills (none, no list). Everything the template or
// the settings bring is escaped; the page runs no script and allows
// frames from the admin API's own origin only.
func (a *admin) previewPage(w http.ResponseWriter, pages []PreviewPage, lang string) {
	var n [16]byte
	_, _ = rand.Read(n[:])
	d := previewPageData{Nonce: hex.EncodeToString(n[:]), Room: a.rm.Name(), Language: lang, Unknown: unknownNames(pages)}
	if k := len(d.Unknown); k > 0 {
		d.UnknownTitle = "The template uses " + plural(k, "variable") + " that no page fills"
	}
	for _, p := range pages {
		q := url.Values{"state": {string(p.State)}}
		if lang != "" {
			q.Set("lang", lang)
		}
		d.States = append(d.States, previewPageState{State: string(p.State), Label: previewLabels[p.State],
			Status: p.Status, Src: "preview?" + q.Encode(), Error: p.Error})
	}
	var buf bytes.Buffer
	if err := previewPageTmpl.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "waitingroom: rendering the preview page failed")
		return
	}
	writePage(w, http.StatusOK, "default-src 'none'; style-src 'nonce-"+d.Nonce+
		"'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'", buf.Bytes())
}
