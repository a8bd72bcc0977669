package template

import "math"

// pluralCategory is a CLDR plural category
// (https://www.unicode.org/cldr/charts/latest/supplemental/language_plural_rules.html).
// Each language uses some of them; every language uses other.
type pluralCategory uint8

const (
	zero pluralCategory = iota
	one
	two
	few
	many
	other
	numCategories
)

var categoryNames = [numCategories]string{"zero", "one", "two", "few", "many", "other"}

func (c pluralCategory) String() string {
	if c < numCategories {
		return categoryNames[c]
	}
	return "invalid"
}

// plurals holds one text per plural category; the categories a language
// does not use stay empty.
type plurals [numCategories]string

// pluralRule maps a count to its plural category. The page only counts
// whole, non-negative things (minutes, hours, seconds), so the rules below
// are the CLDR rules for integers: the operands v, f and t are zero and
// n = i. A rule is given n ≥ 0.
type pluralRule func(n int) pluralCategory

// isMillions is the CLDR condition "i != 0 and i % 1000000 = 0", which
// selects many in the Romance languages ("1 000 000 de minutes").
func isMillions(n int) bool {
	return n != 0 && n%1000000 == 0
}

// pluralOneOther is the rule of English, German, Dutch, Turkish (n = 1 is
// one) and, for integers, of many other languages.
func pluralOneOther(n int) pluralCategory {
	if n == 1 {
		return one
	}
	return other
}

// pluralOther is the rule of languages without grammatical number:
// Japanese, Korean, Chinese.
func pluralOther(int) pluralCategory {
	return other
}

// pluralSpanishItalian is the rule of Spanish and Italian: one for 1, many
// for whole millions.
func pluralSpanishItalian(n int) pluralCategory {
	switch {
	case n == 1:
		return one
	case isMillions(n):
		return many
	}
	return other
}

// pluralFrenchPortuguese is the rule of French and Brazilian Portuguese:
// one for 0 and 1, many for whole millions.
func pluralFrenchPortuguese(n int) pluralCategory {
	switch {
	case n == 0 || n == 1:
		return one
	case isMillions(n):
		return many
	}
	return other
}

// pluralHindi is the rule of Hindi: one for 0 and 1.
func pluralHindi(n int) pluralCategory {
	if n == 0 || n == 1 {
		return one
	}
	return other
}

// pluralPolish is the rule of Polish: one for 1; few for 2–4, 22–24, 32–34,
// ... but not 12–14; many for the other integers. Other is left to
// fractions.
func pluralPolish(n int) pluralCategory {
	if n == 1 {
		return one
	}
	i10, i100 := n%10, n%100
	if i10 >= 2 && i10 <= 4 && (i100 < 12 || i100 > 14) {
		return few
	}
	return many
}

// pluralArabic is the rule of Arabic: zero, one and two for 0, 1 and 2;
// few when n % 100 is 3–10; many when n % 100 is 11–99; other for the rest
// (100–102, 200–202, ...).
func pluralArabic(n int) pluralCategory {
	switch n {
	case 0:
		return zero
	case 1:
		return one
	case 2:
		return two
	}
	switch i100 := n % 100; {
	case i100 >= 3 && i100 <= 10:
		return few
	case i100 >= 11:
		return many
	}
	return other
}

// category returns the plural category of n under rule. A negative n counts
// as its absolute value (math.MinInt, which has none, as math.MaxInt).
func category(rule pluralRule, n int) pluralCategory {
	if n < 0 {
		if n == math.MinInt {
			n = math.MaxInt
		} else {
			n = -n
		}
	}
	return rule(n)
}
