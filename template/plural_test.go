package template

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// category counts a negative number as its absolute value.
func TestCategory(t *testing.T) {
	assert.Equal(t, one, category(pluralOneOther, -1))
	assert.Equal(t, few, category(pluralPolish, -3))
	assert.Equal(t, category(pluralArabic, math.MaxInt), category(pluralArabic, math.MinInt))
	assert.Equal(t, two, category(pluralArabic, 2))
}

func TestPluralCategoryString(t *testing.T) {
	for c, want := range map[pluralCategory]string{zero: "zero", one: "one", two: "two", few: "few", many: "many", other: "other"} {
		assert.Equal(t, want, c.String())
	}
}

func TestPluralRules(t *testing.T) {
	tests := []struct {
		name string
		rule pluralRule
		want map[int]pluralCategory
	}{
		{"one/other", pluralOneOther, map[int]pluralCategory{0: other, 1: one, 2: other, 11: other, 21: other, 101: other}},
		{"other", pluralOther, map[int]pluralCategory{0: other, 1: other, 2: other}},
		{"es/it", pluralSpanishItalian, map[int]pluralCategory{
			0: other, 1: one, 2: other, 1000: other, 1000000: many, 2000000: many, 1000001: other,
		}},
		{"fr/pt", pluralFrenchPortuguese, map[int]pluralCategory{
			0: one, 1: one, 2: other, 11: other, 1000000: many, 3000000: many, 1500000: other,
		}},
		{"hi", pluralHindi, map[int]pluralCategory{0: one, 1: one, 2: other, 11: other}},
		{"pl", pluralPolish, map[int]pluralCategory{
			0: many, 1: one, 2: few, 3: few, 4: few, 5: many, 10: many, 11: many, 12: many, 13: many,
			14: many, 21: many, 22: few, 24: few, 25: many, 101: many, 102: few, 112: many, 1000: many,
		}},
		{"ar", pluralArabic, map[int]pluralCategory{
			0: zero, 1: one, 2: two, 3: few, 10: few, 11: many, 26: many, 99: many, 100: other,
			101: other, 102: other, 103: few, 110: few, 111: many, 199: many, 200: other, 1000: other,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n, want := range tt.want {
				assert.Equal(t, want, tt.rule(n), "n=%d", n)
			}
		})
	}

	assert.Equal(t, one, category(pluralOneOther, -1))
	assert.Equal(t, few, category(pluralPolish, -2))
	assert.NotPanics(t, func() { category(pluralArabic, math.MinInt) })
	assert.Equal(t, "many", many.String())
	assert.Equal(t, "invalid", numCategories.String())
}
