package waitingroom

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTicketInContext: the ticket an admitted request carries in its
// context, through Handler or Decision.Context, is the Decision's, for a
// cookie opened afresh and for one the room remembers; only Handler's
// context lets the application revoke.
func TestTicketInContext(t *testing.T) {
	tr := newTestRoom(t, nil)
	v := &visitor{}
	var (
		inHandler Ticket
		revoked   bool
	)
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ok bool
		inHandler, ok = TicketFromContext(r.Context())
		require.True(t, ok)
		if r.URL.Query().Has("revoke") {
			revoked = Revoke(r.Context())
		}
		_, _ = w.Write([]byte("app"))
	}))
	require.True(t, admitted(tr.get(v, "")))
	first := inHandler
	for range 2 { // opened, then remembered
		d, err := tr.Check(v.request(http.MethodGet, ""))
		require.NoError(t, err)
		require.Equal(t, Admitted, d.Outcome)
		assert.Equal(t, first, d.Ticket)
		require.True(t, admitted(tr.get(v, "")))
		assert.Equal(t, d.Ticket, inHandler)

		ctx := d.Context(context.Background())
		got, ok := TicketFromContext(ctx)
		require.True(t, ok)
		assert.Equal(t, d.Ticket, got)
		assert.False(t, Revoke(ctx), "outside Handler, Revoke does nothing")
	}

	w := tr.get(&visitor{cookie: v.cookie}, "")
	require.True(t, admitted(w))
	r := v.request(http.MethodGet, "")
	r.URL.RawQuery = "revoke"
	tr.app.ServeHTTP(w, r)
	assert.True(t, revoked, "Revoke works in Handler's context")
	d, err := tr.Check(v.request(http.MethodGet, ""))
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, d.Ticket.ID, "the session is over: the cookie is a new visitor's")
	waiting := Decision{Outcome: Waiting}
	assert.Equal(t, context.Background(), waiting.Context(context.Background()), "no ticket for a visitor who is not admitted")
}
