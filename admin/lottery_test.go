package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The status shows the next hour's commitment before it starts, the
// same commitment while it runs, never its seed; and once the hour and
// the draws held after it are over, the seed, which matches it.
func TestStatusLottery(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), nil)
	lot := func() (current, next, revealed *lottery.Record) {
		b, err := json.Marshal(f.getJSON("/status")["lottery"])
		require.NoError(t, err)
		var l struct{ Current, Next, Revealed *lottery.Record }
		require.NoError(t, json.Unmarshal(b, &l))
		return l.Current, l.Next, l.Revealed
	}

	c, n, r := lot()
	assert.Nil(t, c, "before the first sync")
	assert.Nil(t, n)
	assert.Nil(t, r)

	f.sync()
	c, n, r = lot()
	assert.Nil(t, c, "the new state's seed begins at the next second")
	require.NotNil(t, n)
	assert.Nil(t, r)
	assert.True(t, n.Seed.IsZero())
	assert.Equal(t, clk.Now().Unix()+1, n.Start, "the rest of the hour the state started in")
	assert.Equal(t, (n.Start/3600+1)*3600, n.End)
	next := *n

	clk.Set(time.Unix(next.Start, 0))
	f.sync()
	c, n, r = lot()
	require.NotNil(t, c)
	assert.Equal(t, next, *c, "the commitment shown before the hour")
	page := f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, page, "Lottery commitment this hour <code>"+next.Commitment.String()+"</code> · next hour <code>"+n.Commitment.String()+"</code>")
	assert.Contains(t, page, "function lottery(l)")
	require.NotNil(t, n)
	assert.Equal(t, next.End, n.Start)
	assert.Nil(t, r)

	clk.Set(time.Unix(next.End, 0))
	f.sync()
	_, _, r = lot()
	assert.Nil(t, r, "secret while draws made in the hour still hold")

	clk.Add(10 * time.Minute)
	f.sync()
	_, _, r = lot()
	require.NotNil(t, r)
	assert.Equal(t, next.Period, r.Period)
	assert.Equal(t, next.Commitment, r.Commitment)
	_, err := lottery.Verify(r, 1, lottery.Claim{})
	assert.NoError(t, err, "the seed revealed matches the commitment")
	page = f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, page, fmt.Sprintf(" · seed revealed for %d–%d <code>%s</code>", r.Start, r.End, r.Seed))
}
