package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
)

// patchSettings serves PATCH /settings: it decodes the body, checks the
// settings it makes against those this instance knows, and updates the
// room's (Room.Update), answering the new Settings.
func (a *admin) patchSettings(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && mt != "application/merge-patch+json") {
		writeError(w, http.StatusUnsupportedMediaType, "waitingroom: the body must be JSON, with Content-Type: application/json")
		return
	}
	tooLarge := fmt.Sprintf("waitingroom: the body is larger than %d bytes", maxSettingsBody)
	if r.ContentLength > maxSettingsBody {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	p, err := decodeSettingsPatch(http.MaxBytesReader(w, r.Body, maxSettingsBody))
	var mbe *http.MaxBytesError
	var unp errUnprocessable
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	case errors.As(err, &unp):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// Check against the settings this instance knows, for a clear message;
	// Update checks again against the shared ones.
	next := a.rm.Stats().Settings
	next.Events = slices.Clone(next.Events) // validate sorts them
	p.apply(&next)
	if err := next.Validate(); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	var got waitingroom.Settings
	err = a.rm.Update(r.Context(), func(s *waitingroom.Settings) {
		p.apply(s)
		got = *s
	})
	switch {
	case errors.Is(err, waitingroom.ErrInvalidConfig):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, settingsJSON(got))
	}
}

// settingsJSON is s as GET and PATCH /settings answer it: as Settings
// encodes, but with each session duration written as a duration ("10m0s",
// as PATCH takes one), not in nanoseconds. The answer of a GET can be
// sent back as a PATCH unchanged.
func settingsJSON(s waitingroom.Settings) any {
	out := settingsOut{Settings: s, SessionDuration: duration(s.SessionDuration)}
	for _, e := range s.Events {
		out.Events = append(out.Events, eventOut{Event: e, SessionDuration: duration(e.SessionDuration)})
	}
	return out
}

// settingsOut and eventOut are Settings and Event with their session
// durations as text: their fields, of the same names, hide those of the
// embedded ones from encoding/json.
type (
	settingsOut struct {
		waitingroom.Settings
		SessionDuration string     `json:"sessionDuration,omitempty"`
		Events          []eventOut `json:"events,omitempty"`
	}
	eventOut struct {
		waitingroom.Event
		SessionDuration string `json:"sessionDuration,omitempty"`
	}
)

// duration is d as Go writes it, or "" for 0 (the default).
func duration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// errUnprocessable marks a well-formed body whose values are invalid.
type errUnprocessable struct{ msg string }

func (e errUnprocessable) Error() string { return e.msg }

// unprocessable returns an errUnprocessable with the message format
// makes.
func unprocessable(format string, a ...any) error {
	return errUnprocessable{fmt.Sprintf("waitingroom: "+format, a...)}
}

// settingsPatch is a decoded PATCH /settings body: nil fields are left as
// they are.
type settingsPatch struct {
	queueingMethod        *waitingroom.QueueingMethod
	totalActiveUsers      *int
	newUsersPerMinute     *int
	queueAll              *bool
	suspended             *bool
	events                *[]waitingroom.Event // replaces all events when set
	sessionDuration       *time.Duration
	disableSessionRenewal *bool
	queueingStatusCode    *int
	template              *string
	challenge             *challenge.Policy // {} turns it off
}

// queueingMethods are the queueing methods PATCH /settings accepts: all
// of them.
var queueingMethods = []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random, waitingroom.Passthrough, waitingroom.Reject}

// decodeSettingsPatch reads one JSON object with known, non-null, well-typed
// fields, each at most once, and nothing after it.
func decodeSettingsPatch(r io.Reader) (*settingsPatch, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := openObject(dec); err != nil {
		return nil, err
	}
	p := &settingsPatch{}
	seen := map[string]bool{}
	for dec.More() {
		key, raw, err := nextField(dec)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("waitingroom: setting %q appears twice", key)
		}
		seen[key] = true
		if string(raw) == "null" {
			return nil, fmt.Errorf("waitingroom: setting %q must not be null", key)
		}
		if err := p.decode(key, raw); err != nil {
			return nil, err
		}
	}
	if err := closeObject(dec); err != nil {
		return nil, err
	}
	return p, nil
}

// openObject reads the '{' that opens the body.
func openObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err == io.EOF {
		return errors.New("waitingroom: the body must be a JSON object; it is empty")
	}
	if err != nil {
		return syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("waitingroom: the body must be a JSON object")
	}
	return nil
}

// nextField reads the body's next field: its key and its value as it is.
func nextField(dec *json.Decoder) (string, json.RawMessage, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", nil, syntaxError(err)
	}
	key, _ := tok.(string)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return "", nil, syntaxError(err)
	}
	return key, raw, nil
}

// closeObject reads the '}' that closes the body, and makes sure nothing
// follows it.
func closeObject(dec *json.Decoder) error {
	if _, err := dec.Token(); err != nil { // the closing '}'
		return syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return syntaxError(err)
		}
		return errors.New("waitingroom: the body must be one JSON object and nothing after it")
	}
	return nil
}

// syntaxError is the error of a body that is not JSON, or cut short; the
// error of a body over the limit is returned as it is.
func syntaxError(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return fmt.Errorf("waitingroom: malformed JSON: %w", err)
}

// decode sets the setting key of the patch from its value, raw (not null).
func (p *settingsPatch) decode(key string, raw json.RawMessage) error {
	var err error
	switch key {
	case "queueingMethod":
		p.queueingMethod, err = decodeQueueingMethod(key, raw)
	case "totalActiveUsers":
		p.totalActiveUsers, err = decodeLimit(key, raw)
	case "newUsersPerMinute":
		p.newUsersPerMinute, err = decodeLimit(key, raw)
	case "queueAll":
		p.queueAll, err = decodeValue[bool](key, raw, "true or false")
	case "suspended":
		p.suspended, err = decodeValue[bool](key, raw, "true or false")
	case "disableSessionRenewal":
		p.disableSessionRenewal, err = decodeValue[bool](key, raw, "true or false")
	case "queueingStatusCode":
		p.queueingStatusCode, err = decodeValue[int](key, raw, "an integer")
	case "sessionDuration":
		p.sessionDuration, err = decodeSessionDuration(key, raw)
	case "template":
		p.template, err = decodeValue[string](key, raw, "a string")
	case "events":
		// The whole list: to add, change or remove an event, send the
		// list as it should be (GET /settings gives the current one).
		p.events, err = decodeEvents(key, raw)
	case "challenge":
		p.challenge, err = decodeStrict[challenge.Policy](key, raw, "a challenge object")
	default:
		return fmt.Errorf("waitingroom: unknown setting %q; the settings are queueingMethod, totalActiveUsers, newUsersPerMinute, queueAll, suspended, events, sessionDuration, disableSessionRenewal, queueingStatusCode, template and challenge", key)
	}
	return err
}

// decodeValue reads the value of setting key as a T; what says what it
// must be when it is not one.
func decodeValue[T any](key string, raw json.RawMessage, what string) (*T, error) {
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be %s", key, what)
	}
	return &v, nil
}

// decodeStrict reads the value of setting key as a T whose fields are all
// known; what says what it must be when it is not one.
func decodeStrict[T any](key string, raw json.RawMessage, what string) (*T, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be %s: %w", key, what, err)
	}
	return &v, nil
}

// decodeEvents reads setting key as a list of events, each one's
// sessionDuration a duration as the setting's (decodeDuration) and its
// times in RFC 3339.
func decodeEvents(key string, raw json.RawMessage) (*[]waitingroom.Event, error) {
	var evs []map[string]json.RawMessage
	if json.Unmarshal(raw, &evs) != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be a list of events", key)
	}
	for i, ev := range evs {
		if d, ok := ev["sessionDuration"]; ok {
			n, err := decodeDuration(d)
			if err != nil {
				return nil, fmt.Errorf("waitingroom: setting %q: event %d: sessionDuration must be a duration such as \"10m\" or an integer of nanoseconds", key, i+1)
			}
			ev["sessionDuration"], _ = json.Marshal(int64(n))
		}
		for _, k := range [...]string{"prequeueStart", "start", "end"} {
			var t string
			if v, ok := ev[k]; ok && string(v) != "null" && (json.Unmarshal(v, &t) != nil || !validTime(t)) {
				return nil, fmt.Errorf("waitingroom: setting %q: event %d: %s must be a time in RFC 3339, such as \"2026-12-04T10:00:00Z\"", key, i+1, k)
			}
		}
	}
	b, _ := json.Marshal(evs)
	return decodeStrict[[]waitingroom.Event](key, b, "a list of events")
}

// validTime reports whether s is a time as RFC 3339 writes one.
func validTime(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

// decodeQueueingMethod reads setting key as one of the queueing methods.
func decodeQueueingMethod(key string, raw json.RawMessage) (*waitingroom.QueueingMethod, error) {
	m, err := decodeValue[string](key, raw, "a string")
	if err != nil {
		return nil, err
	}
	qm := waitingroom.QueueingMethod(*m)
	if !slices.Contains(queueingMethods, qm) {
		return nil, unprocessable("setting %q must be \"fifo\", \"random\", \"passthrough\" or \"reject\", got %q", key, *m)
	}
	return &qm, nil
}

// decodeLimit reads setting key as a limit: an integer above 0.
func decodeLimit(key string, raw json.RawMessage) (*int, error) {
	n, err := decodeValue[int](key, raw, "an integer")
	if err != nil {
		return nil, err
	}
	if *n <= 0 {
		return nil, unprocessable("setting %q must be > 0, got %d", key, *n)
	}
	return n, nil
}

// decodeSessionDuration reads setting key as a duration (decodeDuration).
func decodeSessionDuration(key string, raw json.RawMessage) (*time.Duration, error) {
	d, err := decodeDuration(raw)
	if err != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be a duration such as \"10m\" or an integer of nanoseconds", key)
	}
	return &d, nil
}

// decodeDuration reads a duration written as Go writes one ("10m",
// "1m30s") or as an integer of nanoseconds, as Settings is encoded.
func decodeDuration(raw json.RawMessage) (time.Duration, error) {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return time.ParseDuration(str)
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, err
	}
	return time.Duration(n), nil
}

// apply changes s as the patch says.
func (p *settingsPatch) apply(s *waitingroom.Settings) {
	if p.events != nil {
		s.Events = slices.Clone(*p.events)
	}
	if p.queueingMethod != nil {
		s.QueueingMethod = *p.queueingMethod
	}
	if p.totalActiveUsers != nil {
		s.TotalActiveUsers = *p.totalActiveUsers
	}
	if p.newUsersPerMinute != nil {
		s.NewUsersPerMinute = *p.newUsersPerMinute
	}
	if p.queueAll != nil {
		s.QueueAll = *p.queueAll
	}
	if p.suspended != nil {
		s.Suspended = *p.suspended
	}
	if p.sessionDuration != nil {
		s.SessionDuration = *p.sessionDuration
	}
	if p.disableSessionRenewal != nil {
		s.DisableSessionRenewal = *p.disableSessionRenewal
	}
	if p.queueingStatusCode != nil {
		s.QueueingStatusCode = *p.queueingStatusCode
	}
	if p.template != nil {
		s.Template = *p.template
	}
	if p.challenge != nil {
		s.Challenge = p.challenge
		if p.challenge.Kind == challenge.Off {
			s.Challenge = nil
		}
	}
}
