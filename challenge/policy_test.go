package challenge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     *Policy
		field string // named by the error; "" when valid
	}{
		{"nil", nil, ""},
		{"zero", &Policy{}, ""},
		{"pow", &Policy{Kind: PoW, Who: Everyone, OnFail: Infinite, Difficulty: 20, RiseEvery: 10, MaxDifficulty: 24, TTL: time.Hour}, ""},
		{"hosted", &Policy{Kind: Hosted, OnFail: Infinite}, ""},
		{"bounds", &Policy{Kind: PoW, Difficulty: MaxDifficulty, MaxDifficulty: MaxDifficulty, TTL: time.Minute}, ""},
		{"kind", &Policy{Kind: "captcha"}, "challenge.Policy.Kind"},
		{"who", &Policy{Who: "all"}, "challenge.Policy.Who"},
		{"onFail", &Policy{OnFail: "block"}, "challenge.Policy.OnFail"},
		{"difficulty", &Policy{Difficulty: 33}, "challenge.Policy.Difficulty"},
		{"negative difficulty", &Policy{Difficulty: -1}, "challenge.Policy.Difficulty"},
		{"max below", &Policy{Difficulty: 20, MaxDifficulty: 19}, "challenge.Policy.MaxDifficulty"},
		{"max below the default", &Policy{MaxDifficulty: DefaultDifficulty - 1}, "challenge.Policy.MaxDifficulty"},
		{"max above", &Policy{MaxDifficulty: MaxDifficulty + 1}, "challenge.Policy.MaxDifficulty"},
		{"rise", &Policy{RiseEvery: -1}, "challenge.Policy.RiseEvery"},
		{"ttl", &Policy{TTL: time.Second}, "challenge.Policy.TTL"},
		{"ttl long", &Policy{TTL: 2 * time.Hour}, "challenge.Policy.TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.field == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.field)
			assert.NotContains(t, err.Error(), ErrInvalid.Error(), "the message is the field's, for the caller to wrap")
		})
	}
}

// The difficulty rises by a bit each time the number waiting doubles
// past RiseEvery, capped at MaxDifficulty (default Difficulty + 4).
func TestDifficultyAt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Policy
		waiting int64
		want    int
	}{
		{"none waiting", Policy{Difficulty: 10, RiseEvery: 100}, 0, 10},
		{"below twice", Policy{Difficulty: 10, RiseEvery: 100}, 199, 10},
		{"twice", Policy{Difficulty: 10, RiseEvery: 100}, 200, 11},
		{"below four times", Policy{Difficulty: 10, RiseEvery: 100}, 399, 11},
		{"four times", Policy{Difficulty: 10, RiseEvery: 100}, 400, 12},
		{"sixteen times", Policy{Difficulty: 10, RiseEvery: 100}, 1600, 14},
		{"capped at Difficulty + 4", Policy{Difficulty: 10, RiseEvery: 100}, 1 << 40, 14},
		{"capped at MaxDifficulty", Policy{Difficulty: 10, RiseEvery: 100, MaxDifficulty: 20}, 1 << 40, 20},
		{"default cap within the package's", Policy{Difficulty: 30, RiseEvery: 1}, 1 << 40, MaxDifficulty},
		{"fixed by default", Policy{}, 1 << 40, DefaultDifficulty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.p.DifficultyAt(tc.waiting))
		})
	}
}

// The JSON form is the admin API's: the tags of the settings.
func TestPolicyJSON(t *testing.T) {
	for _, tc := range []struct {
		json string
		want Policy
	}{
		{`{}`, Policy{}},
		{`{"kind":"pow","onFail":"infinite"}`, Policy{Kind: PoW, OnFail: Infinite}},
		{`{"kind":"hosted","who":"everyone","difficulty":18,"riseEvery":100,"maxDifficulty":22,"ttl":60000000000}`,
			Policy{Kind: Hosted, Who: Everyone, Difficulty: 18, RiseEvery: 100, MaxDifficulty: 22, TTL: time.Minute}},
	} {
		t.Run(tc.json, func(t *testing.T) {
			var p Policy
			require.NoError(t, json.Unmarshal([]byte(tc.json), &p))
			assert.Equal(t, tc.want, p)
			b, err := json.Marshal(p)
			require.NoError(t, err)
			assert.JSONEq(t, tc.json, string(b))
		})
	}
}
