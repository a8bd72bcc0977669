package share

import (
	"context"
	"testing"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update's function says whether to write; one that does not is no
// error, and leaves the state as it was.
func TestUpdateWithoutWrite(t *testing.T) {
	clk, st := testclock.New(testclock.Start), memstore.New()
	s := newTestSyncer(t, clk, st, &testHost{})
	wrote, err := s.update(context.Background(), "k", func(x *store.State) bool {
		x.Version = 5
		return true
	})
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = s.update(context.Background(), "k", func(x *store.State) bool {
		x.Version = 9
		return false
	})
	require.NoError(t, err)
	assert.False(t, wrote)
	got, err := s.read(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, uint64(5), got.Version)
}

// read reads a store without a Reader through an Update that writes
// nothing.
func TestReadWithoutReader(t *testing.T) {
	clk := testclock.New(testclock.Start)
	st := &countingStore{Store: memstore.New()}
	var plain store.Store = struct{ store.Store }{st}
	_, isReader := plain.(store.Reader)
	require.False(t, isReader)
	s := newTestSyncer(t, clk, plain, &testHost{})
	_, err := s.update(context.Background(), "k", func(x *store.State) bool {
		x.Version = 5
		return true
	})
	require.NoError(t, err)
	got, err := s.read(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, uint64(5), got.Version)
	assert.Equal(t, 2, st.updates)
	got, err = s.read(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, uint64(5), got.Version, "the read wrote nothing")
	missing, err := s.read(context.Background(), "none")
	require.NoError(t, err)
	assert.Zero(t, missing.Version, "a key never written: the zero state")
}
