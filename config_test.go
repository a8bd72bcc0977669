package waitingroom

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewValidation(t *testing.T) {
	short := []byte("too short")
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"empty name", func(c *Config) { c.Name = "" }, "Name"},
		{"bad name", func(c *Config) { c.Name = "a b" }, "Name"},
		{"long name", func(c *Config) { c.Name = strings.Repeat("a", 65) }, "Name"},
		{"zero total", func(c *Config) { c.TotalActiveUsers = 0 }, "TotalActiveUsers"},
		{"zero per minute", func(c *Config) { c.NewUsersPerMinute = 0 }, "NewUsersPerMinute"},
		{"per minute above total", func(c *Config) { c.NewUsersPerMinute = 11 }, "must not exceed"},
		{"method", func(c *Config) { c.QueueingMethod = "lifo" }, "QueueingMethod"},
		{"session short", func(c *Config) { c.SessionDuration = 30 * time.Second }, "SessionDuration"},
		{"session long", func(c *Config) { c.SessionDuration = 31 * time.Minute }, "SessionDuration"},
		{"refresh short", func(c *Config) { c.RefreshInterval = time.Millisecond }, "RefreshInterval"},
		{"refresh long", func(c *Config) { c.RefreshInterval = time.Hour }, "RefreshInterval"},
		{"jitter", func(c *Config) { c.RefreshJitter = 0.6 }, "RefreshJitter"},
		{"hold", func(c *Config) { c.QueueHold = 30 * time.Second }, "QueueHold"},
		{"status", func(c *Config) { c.QueueingStatusCode = 503 }, "QueueingStatusCode"},
		{"cookie name", func(c *Config) { c.Cookie.Name = "a;b" }, "Cookie.Name"},
		{"samesite", func(c *Config) { c.Cookie.SameSite = 9 }, "Cookie.SameSite"},
		{"samesite default mode", func(c *Config) { c.Cookie.SameSite = http.SameSiteDefaultMode }, "Cookie.SameSite"},
		{"none without secure", func(c *Config) { c.Cookie.SameSite = http.SameSiteNoneMode }, "requires a Secure"},
		{"no keys", func(c *Config) { c.Keys = nil }, "Keys is required"},
		{"short key", func(c *Config) { c.Keys = [][]byte{testKey, short} }, "Keys[1]"},
		{"template", func(c *Config) { c.Template = "{{#open}}" }, "Template"},
		{"policy", func(c *Config) { c.OnStoreError = 7 }, "OnStoreError"},
		{"language", func(c *Config) { c.Page.Language = "tlh" }, "Page.Language"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(newClock())
			tc.mutate(&cfg)
			rm, err := New(cfg, memstore.New())
			require.Error(t, err)
			assert.Nil(t, rm)
			assert.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "waitingroom: "), err.Error())
		})
	}
	t.Run("nil store", func(t *testing.T) {
		_, err := New(baseConfig(newClock()), nil)
		assert.ErrorIs(t, err, ErrInvalidConfig)
	})
}

func TestDefaults(t *testing.T) {
	tr := newTestRoom(t, nil)
	c := tr.cfg
	assert.Equal(t, FIFO, c.QueueingMethod)
	assert.Equal(t, 5*time.Minute, c.SessionDuration)
	assert.Equal(t, 20*time.Second, c.RefreshInterval)
	assert.Equal(t, 0.1, c.RefreshJitter)
	assert.Equal(t, 5*time.Minute, c.QueueHold)
	assert.Equal(t, http.StatusOK, c.QueueingStatusCode)
	assert.Equal(t, "__waitingroom_launch", tr.cookieName)
	assert.Equal(t, "/", c.Cookie.Path)
	assert.Equal(t, "waitingRoom", c.Page.JSONKey)
	assert.Equal(t, http.SameSiteLaxMode, c.Cookie.SameSite)
	assert.False(t, c.Cookie.Secure)
}

// The settings a Config writes to the state leave the defaults unset, so
// that another release's defaults apply there, and share nothing with
// the Config.
func TestConfigSettings(t *testing.T) {
	c, err := baseConfig(newClock()).normalize()
	require.NoError(t, err)
	yes := true
	c.Events = []Event{{Name: "e", DisableSessionRenewal: &yes}}
	s := c.settings()
	assert.Zero(t, s.SessionDuration, "the default")
	assert.Zero(t, s.QueueingStatusCode, "the default")
	s.Events[0].Name = "x"
	assert.Equal(t, "e", c.Events[0].Name)

	c.SessionDuration, c.QueueingStatusCode = 2*time.Minute, http.StatusTooManyRequests
	s = c.settings()
	assert.Equal(t, 2*time.Minute, s.SessionDuration)
	assert.Equal(t, http.StatusTooManyRequests, s.QueueingStatusCode)
}

// normalize accepts the bounds themselves, and a negative jitter as none.
func TestNormalizeBounds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		check  func(*testing.T, Config)
	}{
		{"refresh at its least", func(c *Config) { c.RefreshInterval = minRefreshInterval }, nil},
		{"refresh at its most", func(c *Config) { c.RefreshInterval = maxRefreshInterval; c.QueueHold = 2 * maxRefreshInterval }, nil},
		{"jitter at its most", func(c *Config) { c.RefreshJitter = 0.5 }, nil},
		{"no jitter", func(c *Config) { c.RefreshJitter = -1 }, func(t *testing.T, c Config) { assert.Zero(t, c.RefreshJitter) }},
		{"hold twice the refresh", func(c *Config) { c.RefreshInterval = 30 * time.Second; c.QueueHold = time.Minute }, nil},
		{"strict cookies", func(c *Config) { c.Cookie.SameSite = http.SameSiteStrictMode }, func(t *testing.T, c Config) {
			assert.Equal(t, http.SameSiteStrictMode, c.Cookie.SameSite)
		}},
		{"secure: None", func(c *Config) { c.Cookie.Secure = true }, func(t *testing.T, c Config) {
			assert.Equal(t, http.SameSiteNoneMode, c.Cookie.SameSite)
		}},
		{"hooks filled", nil, func(t *testing.T, c Config) {
			assert.NotNil(t, c.Random)
			assert.NotNil(t, c.Identities)
			assert.NotNil(t, c.Logger)
			assert.NotNil(t, c.ErrorHandler)
			assert.Equal(t, share.FleetMin, c.fleetMin)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(newClock())
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			c, err := cfg.normalize()
			require.NoError(t, err)
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// The default error handler answers 503 with no internals and no caching.
func TestDefaultErrorHandler(t *testing.T) {
	w := httptest.NewRecorder()
	defaultErrorHandler(w, httptest.NewRequest(http.MethodGet, "/", nil), errors.New("redis: secret detail"))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	assert.NotContains(t, w.Body.String(), "secret")
}
